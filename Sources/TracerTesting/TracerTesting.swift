public enum TracerTesting {}
