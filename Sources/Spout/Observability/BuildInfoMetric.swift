import Foundation

/// `spout_build_info{version,revision} 1`: the build, as a labelled constant to join on.
///
/// **Thread safety:** immutable.
final class BuildInfoMetric: MetricFamily, Sendable {
    func render(into text: inout String) {
        text += "# HELP spout_build_info The build of this binary; always 1.\n# TYPE spout_build_info gauge\n"
        text +=
            "spout_build_info\(renderLabels(names: ["version", "revision"], values: [BuildInfo.version, BuildInfo.revision])) 1\n"
    }
}
