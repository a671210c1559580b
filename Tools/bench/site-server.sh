# Sourced by the Tools/bench scripts that run `tracer serve` on a copy of a store.

# keep_sixty_days MAP OUT: the map as given, but keeping 60 days (the most a site may): a store
# made more than 14 days ago would otherwise be purged under the benchmark by the server's first
# rounds (59,658 interactions in the first, on random site 4's store).
keep_sixty_days() {
    python3 - "$1" "$2" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"^  retentionDays:.*\n", "", text, flags=re.M)
if re.search(r"^settings:[ \t]*$", text, re.M):
    text = re.sub(r"^settings:[ \t]*\n", "settings:\n  retentionDays: 60\n", text, count=1, flags=re.M)
else:
    text += "\nsettings:\n  retentionDays: 60\n"
open(sys.argv[2], "w").write(text)
PY
}

# served_port OUT ERR NAME: the port `tracer serve` printed to OUT once it listens (30 s at
# most); else its last error line, under NAME, and exit 1.
served_port() {
    local port=
    for _ in $(seq 1 300); do
        port=$(grep -o '127.0.0.1:[0-9]*' "$1" 2>/dev/null | head -1 | cut -d: -f2) || true
        [[ -n $port ]] && { echo "$port"; return; }
        sleep 0.1
    done
    echo "$3: tracer serve did not start: $(tail -1 "$2")" >&2
    exit 1
}
