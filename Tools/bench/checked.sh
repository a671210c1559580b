# Sourced by the Tools/bench scripts: `checked COMMAND…` runs a benchmark, then checks that it
# left no process running (Tools/testing/leftovers: tracer, tracer-bench, dbus-daemon, the
# BlueZ stand-in), killing any it finds and failing the run.
checked() {
    local before status=0
    before=$(mktemp)
    # What the benchmark starts carries this mark; other tracer processes are not its concern.
    export TRACER_RUN_ID="bench-$$-$RANDOM"
    Tools/testing/leftovers snapshot "$before"
    "$@" || status=$?
    # Processes end a moment after their parent: give them a few seconds.
    for _ in $(seq 50); do Tools/testing/leftovers check "$before" 2>/dev/null && break; sleep 0.1; done
    if ! Tools/testing/leftovers check "$before" kill; then
        echo "bench: the processes above outlived the benchmark (now killed)" >&2
        status=1
    fi
    rm -f "$before"
    return "$status"
}
