import Dispatch
import Foundation
import OpenSSL
import Reactive
import Spout
import Synchronization

// `swift run spout`: configuration from defaults, file, environment and flags; JSON lines on stdout (requests
// and the service's own messages); a configuration or bind failure is one JSON line on stderr and exit 2 or 1.
// SIGTERM drains after `shutdown.delaySeconds`; SIGINT (Ctrl-C) drains at once; a second signal ends the delay.
// With TLS configured, SIGHUP reloads the certificate and key (a bad file keeps the old ones, logged).
let environment = ProcessInfo.processInfo.environment
let configuration: SpoutConfiguration
do {
    switch try SpoutConfiguration.load(arguments: Array(CommandLine.arguments.dropFirst()), environment: environment) {
    case .help:
        print(SpoutConfiguration.usage, terminator: "")
        exit(0)
    case .version:
        print(BuildInfo.versionLine)
        exit(0)
    case .run(let loaded):
        configuration = loaded
    }
} catch {
    EventLog(sink: DirectLogSink(descriptor: 2)).log(.error, "configuration_invalid", error.description)
    exit(2)
}

let sink = BufferedLogSink()
let events = EventLog(sink: sink, level: configuration.log.level)
for warning in SpoutConfiguration.unknownEnvironmentVariables(in: environment) {
    var fields: [(String, EventLog.Value)] = [("variable", .string(warning.variable))]
    if let suggestion = warning.suggestion { fields.append(("suggestion", .string(suggestion))) }
    events.log(.warn, "configuration_unknown_variable", warning.description, fields)
}

if events.isEnabled(.debug) {
    var fields: [(String, EventLog.Value)] = []
    for (key, value) in configuration.effectiveValues { fields.append((key, .string(value))) }
    events.log(.debug, "configuration", "effective configuration", fields)
}

// The signal sources exist before the service answers `/ready`, so no signal falls between the two. One that
// comes before the service has started ends the process at once: there is nothing to drain yet.
let running = LockedState<SpoutService?>(nil)
let signals = [SIGTERM, SIGINT].map { signalNumber in
    signal(signalNumber, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
    source.setEventHandler {
        guard let service = running.withLock({ $0 }) else {
            sink.flush()
            exit(0)
        }
        let delaySeconds = signalNumber == SIGTERM ? configuration.shutdown.delaySeconds : 0
        events.log(.info, "signal", signalNumber == SIGTERM ? "SIGTERM received" : "SIGINT received")
        Task {
            await service.shutdown(delay: .milliseconds(Int64((delaySeconds * 1000).rounded())))
            sink.flush()
            exit(0)
        }
    }
    source.activate()
    return source
}

// On the main queue, as the other signals: a reload reads two small files, and the main queue is no event loop.
let reloadSignal: (any DispatchSourceSignal)? =
    configuration.tls.isEnabled
    ? {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .main)
        source.setEventHandler {
            events.log(.info, "signal", "SIGHUP received: reloading the tls certificate")
            running.withLock { $0 }?.reloadTLS()
        }
        source.activate()
        return source
    }() : nil

do {
    let service = try SpoutService.start(configuration: configuration, log: sink, events: events)
    running.withLock { $0 = service }
} catch let error as TLSError {
    sink.flush()
    EventLog(sink: DirectLogSink(descriptor: 2)).log(.error, "tls_invalid", "\(error)")
    exit(2)
} catch {
    sink.flush()
    EventLog(sink: DirectLogSink(descriptor: 2)).log(
        .error,
        "listen_failed",
        "cannot listen on \(configuration.host):\(configuration.port): \(error)"
    )
    exit(1)
}
withExtendedLifetime((signals, reloadSignal)) {
    dispatchMain()
}
