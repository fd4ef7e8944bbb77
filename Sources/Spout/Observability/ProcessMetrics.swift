import Foundation

/// The standard `process_*` metrics of the Prometheus client libraries, read from the kernel at each scrape:
/// `process_cpu_seconds_total`, `process_resident_memory_bytes`, `process_virtual_memory_bytes`,
/// `process_open_fds`, `process_max_fds` and `process_start_time_seconds`. A value that cannot be read (no
/// `/proc`) is left out of the exposition rather than shown as a false zero.
///
/// **Thread safety:** immutable; rendering reads only the kernel's files. Safe to call from any thread.
final class ProcessMetrics: MetricFamily, Sendable {
    /// When the process started, in seconds since the epoch (read once: it does not change).
    let startTimeSeconds: Double?

    init() {
        startTimeSeconds = ProcessMetrics.readStartTime()
    }

    func render(into text: inout String) {
        var usage = rusage()
        if getrusage(RUSAGE_SELF.rawValue, &usage) == 0 {
            let seconds =
                Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
            Self.write(
                "process_cpu_seconds_total",
                "counter",
                "Total user and system CPU time spent in seconds.",
                seconds,
                into: &text
            )
        }
        if let statm = Self.read("/proc/self/statm") {
            let fields = statm.split(separator: " ")
            let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
            if fields.count >= 2, let virtualPages = Double(fields[0]), let residentPages = Double(fields[1]) {
                Self.write(
                    "process_virtual_memory_bytes",
                    "gauge",
                    "Virtual memory size in bytes.",
                    virtualPages * pageSize,
                    into: &text
                )
                Self.write(
                    "process_resident_memory_bytes",
                    "gauge",
                    "Resident memory size in bytes.",
                    residentPages * pageSize,
                    into: &text
                )
            }
        }
        if let open = Self.countOpenDescriptors() {
            Self.write("process_open_fds", "gauge", "Number of open file descriptors.", Double(open), into: &text)
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            let maximum: Double = limit.rlim_cur == rlim_t.max ? -1 : Double(limit.rlim_cur)
            Self.write("process_max_fds", "gauge", "Maximum number of open file descriptors.", maximum, into: &text)
        }
        if let startTimeSeconds {
            Self.write(
                "process_start_time_seconds",
                "gauge",
                "Start time of the process since unix epoch in seconds.",
                startTimeSeconds,
                into: &text
            )
        }
    }

    private static func write(_ name: String, _ type: String, _ help: String, _ value: Double, into text: inout String)
    {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(renderNumber(value))\n"
    }

    /// The entries of `/proc/self/fd`, less the descriptor the directory listing itself holds.
    private static func countOpenDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        // The first byte of the name, read in place: `entry.pointee` would copy a whole `dirent`, but the
        // kernel packs entries by their `d_reclen`, so the last one of a buffer may end before `sizeof(dirent)`
        // (AddressSanitizer: heap-buffer-overflow reading `/proc/self/fd`).
        guard let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) else { return nil }
        var count = 0
        while let entry = readdir(directory) {
            let first = UnsafeRawPointer(entry).load(fromByteOffset: nameOffset, as: UInt8.self)
            if first != UInt8(ascii: ".") { count += 1 }
        }
        return max(0, count - 1)
    }

    /// `/proc/self/stat`'s start time (clock ticks after boot) plus `/proc/stat`'s boot time.
    static func readStartTime() -> Double? {
        guard let stat = read("/proc/self/stat"), let bootTime = read("/proc/stat").flatMap(bootTime(inProcStat:))
        else {
            return nil
        }
        return startTime(selfStat: stat, bootTime: bootTime, ticksPerSecond: Double(sysconf(Int32(_SC_CLK_TCK))))
    }

    /// The start time from the text of `/proc/self/stat`: field 22, counted after the command name in parentheses
    /// (which may itself hold spaces and parentheses, so the fields start after the last `)`).
    static func startTime(selfStat: String, bootTime: Double, ticksPerSecond: Double) -> Double? {
        guard ticksPerSecond > 0, let close = selfStat.lastIndex(of: ")") else { return nil }
        let fields = selfStat[selfStat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state), so field 22 is fields[19].
        guard fields.count > 19, let ticks = Double(fields[19]) else { return nil }
        return bootTime + ticks / ticksPerSecond
    }

    /// The `btime` line of `/proc/stat`: the boot time in seconds since the epoch.
    static func bootTime(inProcStat text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// A small file of `/proc`, whole, or `nil`. (`/proc` files report size 0, so read until EOF.)
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = chunk.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, 4096) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
