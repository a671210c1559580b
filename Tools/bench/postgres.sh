# Sourced by the Tools/bench scripts that take --backend postgres: `start_postgres DIR` starts a
# PostgreSQL cluster of the benchmark's own (Tools/testing/pg-cluster: initdb in DIR, a new
# directory, a Unix socket, a free port; stopped and DIR removed when this shell ends, however
# it ends) and sets `postgres_uri` (the socket) and `postgres_tcp_uri` (loopback TCP). The server gets
# 1 GB of shared buffers (the tests' clusters have 64 MB); a site's server would have more.
start_postgres() {
    local dir=$1 port
    mkdir -p "$dir"
    chmod 755 "$dir"
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    (setsid Tools/testing/pg-cluster "$dir" "$port" $$ -c shared_buffers=1GB >"$dir/cluster.out" 2>&1 &)
    for _ in $(seq 600); do
        grep -q '^ready' "$dir/cluster.out" 2>/dev/null && break
        sleep 0.1
    done
    grep -q '^ready' "$dir/cluster.out" || { cat "$dir/cluster.out" >&2; echo "bench: PostgreSQL did not start" >&2; return 1; }
    postgres_uri="postgres://tracer@/tracer?host=$dir&port=$port"
    postgres_tcp_uri="postgres://tracer@127.0.0.1:$port/tracer"
    echo "postgresql: $(/usr/lib/postgresql/*/bin/postgres --version | head -n 1), shared_buffers=1GB, Unix socket"
}
