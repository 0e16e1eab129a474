# One campaign of Scripts/chaos (sourced by it; see its header): `campaign SEED` runs it and
# returns non-zero when the oracle finds a defect. Sets `campaign_ops` to the operations applied.

# Starts a Python test server in the background and prints the port from its "PORT n" line.
start_server() {
    local out=$1; shift
    "$@" >"$out" 2>&1 &
    echo $! >"$out.pid"
    for _ in $(seq 600); do
        if grep -q '^PORT ' "$out" 2>/dev/null; then awk '/^PORT /{print $2; exit}' "$out"; return 0; fi
        kill -0 "$(cat "$out.pid")" 2>/dev/null || break
        sleep 0.1
    done
    echo "chaos: $* did not start: $(tail -n 3 "$out")" >&2
    return 1
}

free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

op() {
    campaign_ops=$((campaign_ops + 1))
    printf '%s %s\n' "$(printf '[%03d s]' $((SECONDS - started)))" "$*" | tee -a "$ops"
}

# The configuration as the campaign's state says; saved by renaming a new file over it.
write_config() {
    {
        printf '[storage]\nroot = "%s"\n\n' "$root"
        # No web server: the campaign does not use it, and tests or another recorder may hold port 8080.
        printf '[http]\nlisten = ""\n\n'
        # The floor at 0: a full disk really fills, and the sweep must make room itself.
        printf '[retention]\nmin_free_percent = 0\nmin_free_bytes = "0"\n\n'
        if [ "$archive" = yes ]; then
            printf '[archive]\nurl = "s3://chaos/site"\nendpoint = "http://127.0.0.1:%s"\ncredentials_file = "%s"\n\n' "$moto_port" "$work/s3"
        fi
        local cam
        for cam in "${synthetic[@]}"; do
            printf '[cameras.%s]\ndevice = "synthetic-%s"\nsize = "160x120"\npixel_format = "yuyv422"\nfps = %s\n\n' "$cam" "${cam#syn}" "$fps"
            local length=10
            [ "$cam" = syn0 ] && length=$segment
            printf '[[record]]\ncamera = "%s"\nsegment_seconds = %s\n' "$cam" "$length"
            [ "$cam" = syn0 ] && [ "$scheduled" = yes ] && printf 'schedule = ["00:00-23:59"]\n'
            printf '\n'
        done
        if [ "$timelapse" = yes ]; then printf '[[timelapse]]\ncamera = "syn0"\ninterval_seconds = 5\n\n'; fi
        if [ "$motion" = yes ]; then printf '[[motion]]\ncamera = "syn0"\n\n'; fi
        if [ "$network" = yes ]; then
            printf '[cameras.rtsp]\nurl = "rtsp://127.0.0.1:%s/cam"\n\n[[record]]\ncamera = "rtsp"\nsegment_seconds = %s\n\n' "$rtsp_proxy_port" "$segment"
            printf '[cameras.mjpeg]\nurl = "http://127.0.0.1:%s/video.mjpg"\n\n[[record]]\ncamera = "mjpeg"\nsegment_seconds = 10\n\n' "$mjpeg_proxy_port"
        fi
    } >"$config.new"
    mv "$config.new" "$config"
}

start_vigil() {
    starts=$((starts + 1))
    "$vigil" run --config "$config" --log-level notice >>"$log" 2>&1 &
    pid=$!
    # Until it has recovered and handles signals (it says so): a fault never lands in its first moments.
    for _ in $(seq 600); do
        [ "$(grep -c 'SIGHUP reloads' "$log" || true)" -ge "$starts" ] && return 0
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
}

stop_vigil() {
    kill -TERM "$pid" 2>/dev/null || true
    local status=0
    wait "$pid" || status=$?
    pid=
    if [ "$status" -ne 0 ]; then op "DEFECT vigil exited $status on SIGTERM (expected 0)"; clean_exits=no; fi
}

# A network camera's proxy: stalled for a while (SIGSTOP: held bytes come in a burst after).
stall_proxy() {
    local name=$1 seconds=$((2 + RANDOM % 5))
    op "stall $name ${seconds}s"
    kill -STOP "$(cat "$work/$name-proxy.out.pid")"
    sleep "$seconds"
    kill -CONT "$(cat "$work/$name-proxy.out.pid")"
}

# A network camera's proxy replaced on the same port: the connection breaks and is made again.
drop_proxy() {
    local name=$1 upstream=$2 port=$3
    op "drop $name's connection"
    kill "$(cat "$work/$name-proxy.out.pid")" 2>/dev/null || true
    wait "$(cat "$work/$name-proxy.out.pid")" 2>/dev/null || true
    start_server "$work/$name-proxy.out" /usr/bin/python3 "$servers/tcp-proxy.py" --upstream "127.0.0.1:$upstream" --port "$port" --rtp-jumps >/dev/null
}

# The RTSP camera's clock set 20 s forward or back (its proxy moves the RTP timestamps).
jump_clock() {
    if [ $((RANDOM % 2)) = 0 ]; then
        op "rtsp camera's clock set 20 s forward"; kill -USR1 "$(cat "$work/rtsp-proxy.out.pid")"
    else
        op "rtsp camera's clock set 20 s back"; kill -USR2 "$(cat "$work/rtsp-proxy.out.pid")"
    fi
}

# The bucket's endpoint is a proxy in front of moto (which keeps its objects in memory only):
# down, connections are refused; up again, the same objects are there.
bucket_endpoint() {
    if [ "$1" = down ]; then
        kill "$(cat "$work/moto-proxy.out.pid")" 2>/dev/null || true
        wait "$(cat "$work/moto-proxy.out.pid")" 2>/dev/null || true
    else
        start_server "$work/moto-proxy.out" /usr/bin/python3 "$servers/tcp-proxy.py" --upstream "127.0.0.1:$moto_real_port" --port "$moto_port" >/dev/null
    fi
}

# One configuration change of a kind the seed picks, delivered by SIGHUP, the watcher or both.
reload_op() {
    local what last="syn$((cameras - 1))"
    case $((RANDOM % 5)) in
        0) if [ "${synthetic[-1]}" = "$last" ]; then what="remove $last"; unset 'synthetic[-1]'
           else what="add $last"; synthetic+=("$last"); fi ;;
        1) case $segment in 10) segment=20 ;; 20) segment=15 ;; *) segment=10 ;; esac; what="segment_seconds $segment" ;;
        2) timelapse=$([ "$timelapse" = yes ] && echo no || echo yes); what="timelapse $timelapse" ;;
        3) motion=$([ "$motion" = yes ] && echo no || echo yes); what="motion $motion" ;;
        *) scheduled=$([ "$scheduled" = yes ] && echo no || echo yes); what="schedule $scheduled" ;;
    esac
    write_config
    case $((RANDOM % 3)) in
        0) op "reload ($what) by SIGHUP"; kill -HUP "$pid" ;;
        1) op "reload ($what) by the watcher" ;;
        *) op "reload ($what) by the watcher and SIGHUP at once"; kill -HUP "$pid" ;;
    esac
}

campaign() {
    local seed=$1
    RANDOM=$seed
    campaign_ops=0
    work=$(mktemp -d /tmp/vigil-chaos-XXXXXX)
    root=$work/root config=$work/vigil.toml log=$work/vigil.log ops=$work/operations.log
    mkdir -p "$root"
    : >"$ops"
    pid= starts=0 mounted=no ballast=no bucket_down=no clean_exits=yes
    if [ "$(id -u)" = 0 ]; then
        mount -t tmpfs -o size="${disk_mb}m" vigil-chaos "$root"
        mounted=yes
    fi
    synthetic=()
    for ((i = 0; i < cameras; i++)); do synthetic+=("syn$i"); done
    segment=10 timelapse=yes motion=no scheduled=no
    if [ "$network" = yes ]; then
        rtsp_port=$(start_server "$work/rtsp.out" /usr/bin/python3 "$servers/rtsp-server.py" --fps 15 --gop 15)
        rtsp_proxy_port=$(start_server "$work/rtsp-proxy.out" /usr/bin/python3 "$servers/tcp-proxy.py" --upstream "127.0.0.1:$rtsp_port" --rtp-jumps)
        mkdir -p "$work/jpeg"
        ffmpeg -v error -f lavfi -i testsrc=size=320x240:rate=10 -frames:v 20 -q:v 3 "$work/jpeg/frame%d.jpg"
        mjpeg_port=$(start_server "$work/mjpeg.out" /usr/bin/python3 "$servers/mjpeg-server.py" "$work"/jpeg/frame*.jpg --fps 10)
        mjpeg_proxy_port=$(start_server "$work/mjpeg-proxy.out" /usr/bin/python3 "$servers/tcp-proxy.py" --upstream "127.0.0.1:$mjpeg_port")
    fi
    if [ "$archive" = yes ]; then
        moto_real_port=$(free_port)
        "$moto_python" "$servers/moto-server.py" -H 127.0.0.1 -p "$moto_real_port" >"$work/moto.out" 2>&1 &
        echo $! >"$work/moto.out.pid"
        "$moto_python" "$servers/s3-moto-helper.py" create-bucket "http://127.0.0.1:$moto_real_port" chaos
        moto_port=$(free_port)
        bucket_endpoint up
        printf '[default]\naws_access_key_id = chaos\naws_secret_access_key = chaos-secret\n' >"$work/s3"
        chmod 600 "$work/s3"
    fi
    write_config
    "$vigil" check-config --no-probe "$config" >/dev/null
    echo "chaos: seed $seed, $minutes min, ${#synthetic[@]} synthetic camera(s) at $fps fps$([ "$network" = yes ] && echo ", RTSP and MJPEG cameras")$([ "$archive" = yes ] && echo ", archive")$([ "$mounted" = yes ] && echo ", a ${disk_mb} MiB disk"); replay: Scripts/chaos --seed $seed --minutes $minutes --build $build"
    started=$SECONDS
    start_vigil
    local end=$((SECONDS + seconds)) full_since=0
    while true; do
        local pause=$((2 + RANDOM % 5))
        [ $((SECONDS + pause)) -ge "$end" ] && break
        sleep "$pause"
        if ! kill -0 "$pid" 2>/dev/null; then
            local status=0
            wait "$pid" || status=$?
            op "DEFECT vigil exited by itself (status $status); starting it again"
            clean_exits=no
            start_vigil
            continue
        fi
        case $((RANDOM % 12)) in
            0|1|2|3) reload_op ;;
            4) op "same configuration saved and signalled"; write_config; kill -HUP "$pid" ;;
            5) op "SIGTERM and start"; stop_vigil; start_vigil ;;
            6) op "kill -9 and start"; kill -9 "$pid"; wait "$pid" 2>/dev/null || true; start_vigil ;;
            7) [ "$network" = yes ] && { [ $((RANDOM % 2)) = 0 ] && stall_proxy rtsp || jump_clock; } ;;
            8) [ "$network" = yes ] && { [ $((RANDOM % 2)) = 0 ] && stall_proxy mjpeg || drop_proxy rtsp "$rtsp_port" "$rtsp_proxy_port"; } ;;
            9) if [ "$mounted" = yes ] && [ "$ballast" = no ]; then
                   op "disk filled"; full_since=$(date +%s%N); ballast=yes
                   dd if=/dev/zero of="$root/.ballast" bs=1M count="$disk_mb" status=none 2>/dev/null || true
               elif [ "$ballast" = yes ]; then
                   rm -f "$root/.ballast"; ballast=no
                   echo "diskfull $full_since $(date +%s%N)" >>"$ops"; op "disk freed"
               fi ;;
            *) if [ "$archive" = yes ] && [ "$bucket_down" = no ]; then
                   op "bucket endpoint down"; bucket_endpoint down; bucket_down=yes
               elif [ "$bucket_down" = yes ]; then
                   op "bucket endpoint up"; bucket_endpoint up; bucket_down=no
               fi ;;
        esac
    done
    # Every fault undone, time to catch up, then the clean stop the oracle judges.
    if [ "$ballast" = yes ]; then rm -f "$root/.ballast"; echo "diskfull $full_since $(date +%s%N)" >>"$ops"; op "disk freed"; fi
    if [ "$bucket_down" = yes ]; then op "bucket endpoint up"; bucket_endpoint up; fi
    sleep 8
    op "final SIGTERM"
    stop_vigil
    local verdict=0
    campaign_verdict "$seed" || verdict=1
    campaign_cleanup
    return "$verdict"
}

# The oracle and the checks after the final stop; prints the seed and operations on a failure.
campaign_verdict() {
    local seed=$1 result=0
    echo "chaos: $campaign_ops operation(s); checking…"
    "$bench" chaos-check "$root" "$log" "$ops" "$fps" || result=1
    local mode
    for mode in "" --deep; do
        "$vigil" verify --data "$root" $mode >"$work/verify$mode.out" 2>&1 || { echo "chaos: vigil verify $mode: the index and the disk differ:"; tail -n 20 "$work/verify$mode.out"; result=1; }
    done
    if [ "$archive" = yes ]; then
        "$moto_python" "$here/Scripts/chaos-archive-check.py" "http://127.0.0.1:$moto_real_port" chaos site "$root" "$log" || result=1
    fi
    [ "$clean_exits" = yes ] || result=1
    grep -q DEFECT "$ops" && result=1
    if [ "$result" -ne 0 ]; then
        echo "chaos: seed $seed FAILED. Operations (replay with Scripts/chaos --seed $seed --minutes $minutes --build $build):"
        cat "$ops"
        echo "chaos: the recorder's log: $log (kept)"
        keep=yes
    else
        echo "chaos: seed $seed passed"
    fi
    return "$result"
}

# Ends what a campaign started (also on the way out of an interrupted one: Scripts/chaos traps EXIT).
campaign_cleanup() {
    [ -n "${work:-}" ] && [ -d "$work" ] || return 0
    set +e
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    local f
    for f in "$work"/*.out.pid; do [ -f "$f" ] && kill -CONT "$(cat "$f")" 2>/dev/null && kill "$(cat "$f")" 2>/dev/null; done
    [ "$mounted" = yes ] && { [ "$keep" = yes ] && cp -a "$root" "$work/root-copy"; umount "$root"; }
    [ "$keep" = yes ] || rm -rf "$work"
    work=
    set -e
}
