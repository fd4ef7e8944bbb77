import PackagePlugin

/// Generates the fixed-arity merges of `Reactive` (`Publishers.Merge`, `Merge3`…`Merge8`) at build time by running
/// `GenerateArities`, so that their seven declarations come from one template instead of seven hand-written copies.
@main
struct ReactiveArities: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: any Target) throws -> [Command] {
        let generator = try context.tool(named: "GenerateArities")
        let output = context.pluginWorkDirectoryURL.appending(path: "Publishers.Merge+Arities.swift")
        return [
            .buildCommand(
                displayName: "Generating Publishers.Merge…Merge8",
                executable: generator.url,
                arguments: [output.path(percentEncoded: false)],
                inputFiles: [generator.url],
                outputFiles: [output]
            )
        ]
    }
}
