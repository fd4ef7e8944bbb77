import Foundation

extension Timer {
    /// Returns a publisher that repeatedly emits the current date on the given interval.
    ///
    /// The publisher is connectable: the timer starts on `connect()` (or on the first subscription
    /// through `autoconnect()`), and all subscribers share it.
    ///
    ///     let timer = Timer.publish(every: 1, on: .main, in: .default)
    ///     let c1 = timer.sink { print($0) }; let c2 = timer.connect()
    ///     // Prints: 2024-01-01 12:00:01 +0000 (and so on, once a second)
    ///
    /// - Parameters:
    ///   - interval: The time interval on which to publish events, in seconds.
    ///   - tolerance: The allowed timing variance when emitting events; `nil` allows any.
    ///   - runLoop: The run loop on which the timer runs.
    ///   - mode: The run loop mode in which to run the timer.
    ///   - options: Scheduler options passed to the timer; the run loop has none.
    /// - Returns: A publisher that repeatedly emits the current date on the given interval.
    public static func publish(
        every interval: TimeInterval,
        tolerance: TimeInterval? = nil,
        on runLoop: RunLoop,
        in mode: RunLoop.Mode,
        options: RunLoop.SchedulerOptions? = nil
    ) -> TimerPublisher {
        TimerPublisher(interval: interval, tolerance: tolerance, runLoop: runLoop, mode: mode, options: options)
    }

    /// A publisher that repeatedly emits the current date on a given interval, once connected.
    ///
    /// Each subscriber keeps its own demand: a tick that finds a subscriber without demand is
    /// dropped for it. Cancelling the connection invalidates the timer; the publisher never completes.
    ///
    /// **Ownership:** while connected, the run loop retains the timer, which retains the subject its
    /// subscribers are attached to; the connection returned by ``connect()`` retains the publisher.
    ///
    /// **Thread safety:** safe to call from any thread.
    public final class TimerPublisher: ConnectablePublisher, @unchecked Sendable {
        // @unchecked Sendable: `connection` is only touched inside `lock`; the run loop is used only to add
        // the timer, which Foundation allows from any thread; everything else is immutable.
        public typealias Output = Date
        public typealias Failure = Never

        /// The time interval on which to publish events, in seconds.
        public let interval: TimeInterval
        /// The allowed timing variance when emitting events; `nil` allows any.
        public let tolerance: TimeInterval?
        /// The run loop on which the timer runs.
        public let runLoop: RunLoop
        /// The run loop mode in which to run the timer.
        public let mode: RunLoop.Mode
        /// Scheduler options passed to the timer.
        public let options: RunLoop.SchedulerOptions?

        private let subject = PassthroughSubject<Date, Never>()
        private let lock = Lock()
        private var connection: Timer?  // Guarded by lock.

        /// Creates a publisher that repeatedly emits the current date on the given interval.
        public init(
            interval: TimeInterval,
            tolerance: TimeInterval? = nil,
            runLoop: RunLoop,
            mode: RunLoop.Mode,
            options: RunLoop.SchedulerOptions? = nil
        ) {
            self.interval = interval
            self.tolerance = tolerance
            self.runLoop = runLoop
            self.mode = mode
            self.options = options
        }

        public func receive<S: Subscriber>(subscriber: S) where S.Input == Date, S.Failure == Never {
            subject.receive(subscriber: subscriber)
        }

        /// Starts the timer, unless it is running already.
        ///
        /// - Returns: A cancellable that invalidates the timer. Unlike an `AnyCancellable`, dropping it
        ///   does not stop the timer, as in Combine.
        public func connect() -> any Cancellable {
            let subject = subject
            let timer = lock.withLock { () -> Timer? in
                guard connection == nil else { return nil }
                let timer = Timer(timeInterval: interval, repeats: true) { _ in subject.send(Date()) }
                if let tolerance { timer.tolerance = tolerance }
                connection = timer
                return timer
            }
            if let timer {
                runLoop.add(timer, forMode: mode)
            }
            return TimerConnection(publisher: self)
        }

        fileprivate func disconnect() {
            lock.withLock { () -> Timer? in
                defer { connection = nil }
                return connection
            }?.invalidate()
        }
    }
}

/// The connection returned by `Timer.TimerPublisher.connect()`: cancelling it invalidates the timer.
///
/// Audited: no lock needed because it is immutable; the publisher guards its own state.
private struct TimerConnection: Cancellable, Sendable {
    let publisher: Timer.TimerPublisher

    func cancel() {
        publisher.disconnect()
    }
}
