import Dispatch
import Foundation
import Spout

// `swift run spout`: configuration from defaults, file, environment and flags; SIGTERM/SIGINT drain.
let configuration: SpoutConfiguration
do {
    switch try SpoutConfiguration.load(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment) {
    case .help:
        print(SpoutConfiguration.usage)
        exit(0)
    case .run(let loaded):
        configuration = loaded
    }
} catch {
    FileHandle.standardError.write(Data("spout: \(error)\n".utf8))
    exit(2)
}

let log = BufferedLogSink()
let service: SpoutService
do {
    service = try SpoutService.start(configuration: configuration, log: log)
} catch {
    FileHandle.standardError.write(Data("spout: cannot listen on \(configuration.host):\(configuration.port): \(error)\n".utf8))
    exit(1)
}
if let notice = service.connectionLimitNotice {
    FileHandle.standardError.write(Data("spout: \(notice)\n".utf8))
}
FileHandle.standardError.write(Data("spout: listening on http://\(configuration.host):\(service.port)\n".utf8))

let signals = [SIGTERM, SIGINT].map { signalNumber in
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
    source.setEventHandler {
        FileHandle.standardError.write(Data("spout: draining (grace \(configuration.shutdown.graceSeconds) s)\n".utf8))
        Task {
            await service.shutdown()
            log.flush()
            exit(0)
        }
    }
    source.activate()
    return source
}
withExtendedLifetime(signals) {
    dispatchMain()
}
