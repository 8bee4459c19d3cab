#!/usr/bin/env bash
# make_vectors.sh - regenerate the golden vectors in this directory by hand (not run by CI).
#
# Starts the stock xrootd (Debian 5.5.3) on 127.0.0.1:PORT with a fresh data
# directory, runs every scenario through capture.py (a recording relay), then
# stops the server by its PID. Needs: xrootd, xrdcp, xrdfs, /usr/bin/python3 with
# the XRootD bindings. See README.md.
#
# usage: make_vectors.sh [--port 11294] [--out DIR]  (default DIR: this directory)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PORT=11294
OUT=$HERE
while [ $# -gt 0 ]; do
  case "$1" in
    --port) PORT=$2; shift 2;;
    --out) OUT=$2; shift 2;;
    *) echo "usage: $0 [--port P] [--out DIR]" >&2; exit 2;;
  esac
done
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
PY=/usr/bin/python3
CAP=("$PY" "$HERE/capture.py" run "$PORT" "$OUT")

STATE=$(mktemp -d /tmp/xroot-vectors.XXXXXX)
chmod a+rx "$STATE"
mkdir -p "$STATE"/{data,run,logs,pids,local}
DATA=$STATE/data
LOCAL=$STATE/local

# Deterministic content: byte i of every file is (i * 7) % 251. mtime/atime are
# pinned so stat answers repeat (ctime and inode numbers cannot be pinned).
"$PY" - "$DATA" "$LOCAL" <<'EOF'
import os, sys
data, local = sys.argv[1], sys.argv[2]
def put(path, n):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(bytes((i * 7) % 251 for i in range(n)))
    os.utime(path, (1700000000, 1700000000))
for name, n in [("small.bin", 5000), ("big.bin", 300000), ("tomv.bin", 1234),
                ("dir/a.bin", 1000), ("dir/b.bin", 5000)]:
    put(os.path.join(data, name), n)
os.makedirs(os.path.join(data, "dir/sub"))
for d in ("dir/sub", "dir"):
    os.utime(os.path.join(data, d), (1700000000, 1700000000))
put(os.path.join(local, "up100k.bin"), 100000)
put(os.path.join(local, "part.bin"), 1000)
EOF

cat > "$STATE/server.cfg" <<EOF
xrd.port $PORT
xrd.network nodnr
all.export /
oss.localroot $DATA
all.adminpath $STATE/run
all.pidpath   $STATE/run
xrootd.chksum max 4 adler32 crc32c
EOF

RUNAS=()
if [ "$(id -u)" = 0 ]; then
  RUSER=xrootd; id "$RUSER" >/dev/null 2>&1 || RUSER=nobody
  RUNAS=(-R "$RUSER")
  chown -R "$RUSER": "$DATA" "$STATE/run" "$STATE/logs" "$STATE/pids"
fi
( cd "$STATE/run" && xrootd -I v4 "${RUNAS[@]}" -b -n vectors -c "$STATE/server.cfg" \
    -l "$STATE/logs/xrootd.log" -s "$STATE/pids/server.pid" )
SERVER_PID=$(cat "$STATE/pids/server.pid")
stop() { kill -TERM "$SERVER_PID" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 100); do
  XRD_CONNECTIONRETRY=1 timeout 5 xrdfs "root://127.0.0.1:$PORT" query config version >/dev/null 2>&1 && break
  sleep 0.2
done
echo "server $(xrootd -v 2>&1) pid $SERVER_PID on 127.0.0.1:$PORT, state $STATE"

py() { "${CAP[@]}" "$1" -- "$PY" "$HERE/pyclient.py" '{url}' "$1"; }
xrdfs_() { local name=$1; shift; "${CAP[@]}" "$name" -- xrdfs '{url}' "$@"; }

# session and file I/O (Python bindings)
py ping
py open_read
py stat_handle
py read_eof
py readv
py open_write
py open_missing
py query_config
py query_checksum
# paged I/O and plain write (xrdcp)
"${CAP[@]}" pgread -- xrdcp -N '{url}//big.bin' "$LOCAL/big.copy"
"${CAP[@]}" pgread_parallel -- env XRD_CPCHUNKSIZE=65536 XRD_CPPARALLELCHUNKS=4 \
    xrdcp -N '{url}//big.bin' "$LOCAL/big.copy2"
"${CAP[@]}" pgread_unaligned -- xrdcp -N --continue '{url}//big.bin' "$LOCAL/part.bin"
"${CAP[@]}" pgwrite -- xrdcp -N "$LOCAL/up100k.bin" '{url}//up_pgwrite.bin'
"${CAP[@]}" write -- env XRD_CPUSEPGWRTRD=0 xrdcp -N "$LOCAL/up100k.bin" '{url}//up_write.bin'
cmp "$LOCAL/big.copy" "$DATA/big.bin"
cmp "$LOCAL/big.copy2" "$DATA/big.bin"
cmp "$LOCAL/part.bin" "$DATA/big.bin"
cmp "$LOCAL/up100k.bin" "$DATA/up_pgwrite.bin"
cmp "$LOCAL/up100k.bin" "$DATA/up_write.bin"
# namespace (xrdfs)
xrdfs_ stat_path stat /big.bin
xrdfs_ stat_missing stat /missing.bin || true
xrdfs_ dirlist ls /dir
xrdfs_ dirlist_stat ls -l /dir
xrdfs_ query_config_xrdfs query config readv_iov_max
xrdfs_ mkdir mkdir -p /newdir/sub
xrdfs_ mv mv /tomv.bin /moved.bin
xrdfs_ rm rm /moved.bin
xrdfs_ rmdir rmdir /newdir/sub
[ -d "$DATA/newdir" ] && [ ! -e "$DATA/newdir/sub" ] && [ ! -e "$DATA/tomv.bin" ] && [ ! -e "$DATA/moved.bin" ]

stop
trap - EXIT
for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
rm -rf "$STATE"
echo "done: vectors in $OUT"
