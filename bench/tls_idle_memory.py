#!/usr/bin/env python3
"""Memory per idle TLS connection (issue 29): starts the given spout binary with a throwaway ECDSA P-256
certificate, opens COUNT TLS connections to it from this process (handshake done, then idle), and reports what they
added to spout's anonymous memory (RssAnon in /proc/PID/status) and to the kernel's TCP memory (/proc/net/sockstat
"TCP: ... mem", pages; both ends of each loopback connection, so an upper bound for the server's side).

    python3 bench/tls_idle_memory.py .build/release/spout 10000 [runs]

Needs `openssl` and an open-file limit above COUNT plus a margin for this process and spout.
"""
import os, re, signal, socket, ssl, subprocess, sys, tempfile, time


def anon(pid):
    return int(re.search(r"RssAnon:\s+(\d+)", open(f"/proc/{pid}/status").read()).group(1))


def socket_memory():
    return int(re.search(r"TCP: .* mem (\d+)", open("/proc/net/sockstat").read()).group(1)) * 4


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(binary, count, directory):
    port = free_port()
    environment = dict(os.environ, SPOUT_PORT=str(port), SPOUT_MAX_CONNECTIONS=str(count * 2),
                       SPOUT_LOG_REQUESTS="false", SPOUT_TLS_CERTIFICATE_FILE=f"{directory}/c.pem",
                       SPOUT_TLS_PRIVATE_KEY_FILE=f"{directory}/k.pem")
    spout = subprocess.Popen([binary], env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        spout.stdout.readline()  # the listening line
        context = ssl.create_default_context(cafile=f"{directory}/c.pem")
        time.sleep(0.5)
        anon0, kernel0 = anon(spout.pid), socket_memory()
        connections = []
        for _ in range(count):
            raw = socket.create_connection(("127.0.0.1", port))
            connections.append(context.wrap_socket(raw, server_hostname="localhost"))
        time.sleep(2)
        anon1, kernel1 = anon(spout.pid), socket_memory()
        for connection in connections:
            connection.close()
        return (anon1 - anon0) / count, (kernel1 - kernel0) / count
    finally:
        spout.send_signal(signal.SIGINT)
        spout.wait(timeout=60)


def main():
    binary, count = sys.argv[1], int(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with tempfile.TemporaryDirectory() as directory:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", f"{directory}/k.pem", "-out", f"{directory}/c.pem", "-days", "5",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, capture_output=True)
        results = []
        for run_number in range(runs):
            anon_each, kernel_each = run(binary, count, directory)
            results.append((anon_each, kernel_each))
            print(f"run {run_number + 1}: {count} idle TLS connections: anonymous {anon_each:.1f} KiB each, "
                  f"kernel TCP {kernel_each:.1f} KiB each, total {anon_each + kernel_each:.1f} KiB each", flush=True)
        median = sorted(results, key=sum)[len(results) // 2]
        print(f"median: anonymous {median[0]:.1f} KiB + kernel {median[1]:.1f} KiB = {sum(median):.1f} KiB per idle "
              f"TLS connection (goal <= 48 KiB)")


main()
