import Foundation

/// How many CPUs the process may really use, for `eventLoops: 0`: the online processors, capped by the
/// container's CPU quota (Kubernetes `resources.limits.cpu`, `docker run --cpus`) read from the cgroup.
///
/// - cgroup v2: `cpu.max` holds `QUOTA PERIOD` (microseconds) or `max PERIOD` for no limit.
/// - cgroup v1: `cpu.cfs_quota_us` (`-1` for no limit) and `cpu.cfs_period_us`, under the `cpu` controller's
///   mount (`cpu`, `cpu,cpuacct` or `cpuacct,cpu`).
///
/// The process's own cgroup comes from `/proc/self/cgroup`; every level from it up to the mount's root is read
/// and the smallest quota wins (a parent's limit binds its children). A quota of 1.5 CPUs gives 2 loops (the
/// quota is time, so a partly used second loop still helps latency). Missing files, `max`, `-1`, zero or
/// negative values and text that is not numbers all mean "no limit known", never a crash or a zero.
///
/// **Thread safety:** stateless; reads files.
enum CPUQuota {
    /// The event loops for `eventLoops: 0`: `available` capped by the quota found under `root`, at least 1.
    ///
    /// - Parameters:
    ///   - available: The processors the process may run on.
    ///   - root: Where the cgroup file systems are mounted.
    ///   - selfCgroup: The text of `/proc/self/cgroup`.
    static func loopCount(available: Int, root: String = "/sys/fs/cgroup", selfCgroup: String? = nil) -> Int {
        let cgroupText = selfCgroup ?? (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? ""
        guard let quota = limit(root: root, selfCgroup: cgroupText) else { return max(1, available) }
        return max(1, min(max(1, available), Int(quota.rounded(.up))))
    }

    /// The CPU quota in CPUs (`2.5` for `250000 100000`), or `nil` when none is set or none can be read.
    static func limit(root: String, selfCgroup: String) -> Double? {
        var smallest: Double?
        func consider(_ value: Double?) {
            guard let value else { return }
            smallest = min(smallest ?? value, value)
        }
        for line in selfCgroup.split(separator: "\n") {
            // `hierarchy-ID:controller-list:cgroup-path`; the path may itself contain colons.
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3 else { continue }
            let controllers = parts[1].split(separator: ",")
            let path = String(parts[2])
            if parts[0] == "0" && parts[1].isEmpty {
                for directory in levels(of: path, under: root) {
                    consider(read(directory + "/cpu.max").flatMap(parseCPUMax))
                }
            } else if controllers.contains("cpu") {
                for mount in [parts[1], "cpu", "cpu,cpuacct", "cpuacct,cpu"].map(String.init) {
                    for directory in levels(of: path, under: root + "/" + mount) {
                        guard let quota = read(directory + "/cpu.cfs_quota_us"),
                            let period = read(directory + "/cpu.cfs_period_us")
                        else { continue }
                        consider(parseV1(quota: quota, period: period))
                    }
                }
            }
        }
        return smallest
    }

    /// `cpu.max` (`"200000 100000"` → 2.0; `"max 100000"` → nil; anything malformed → nil).
    static func parseCPUMax(_ text: String) -> Double? {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" })
        guard fields.count == 2, fields[0] != "max" else { return nil }
        return ratio(String(fields[0]), String(fields[1]))
    }

    /// cgroup v1's quota and period files (`"-1"` → nil).
    static func parseV1(quota: String, period: String) -> Double? {
        ratio(
            quota.trimmingCharacters(in: .whitespacesAndNewlines),
            period.trimmingCharacters(in: .whitespacesAndNewlines)
        )
    }

    private static func ratio(_ quota: String, _ period: String) -> Double? {
        guard let quota = Int64(quota), let period = Int64(period), quota > 0, period > 0 else { return nil }
        return Double(quota) / Double(period)
    }

    /// The directory of `path` under `root` and each parent up to `root` itself, deepest first; a path with `..`
    /// is not followed out of `root`.
    private static func levels(of path: String, under root: String) -> [String] {
        let pieces = path.split(separator: "/").filter { $0 != "." }
        guard !pieces.contains("..") else { return [root] }
        var result: [String] = []
        for depth in stride(from: pieces.count, through: 0, by: -1) {
            result.append(([root] + pieces.prefix(depth).map(String.init)).joined(separator: "/"))
        }
        return result
    }

    private static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path), data.count < 4096 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
