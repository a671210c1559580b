print("tracer")
