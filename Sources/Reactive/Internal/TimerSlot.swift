/// Bookkeeping for one cancellable timer that may be re-armed: which generation is current, and
/// its `Cancellable` once the scheduler has returned it.
///
/// Timers are created with `schedule(after:interval:…)` so that they can be cancelled (releasing
/// the closure) when they are re-armed or the operator is cancelled. Scheduling happens outside the
/// owner's lock, so a timer may fire, or be superseded, before its cancellable is stored; the
/// generation tells a stale fire from a current one, and ``scheduled(_:generation:)`` hands back a
/// cancellable that arrived too late, for the owner to cancel.
///
/// **Ownership:** value type, stored inside the owner's state machine.
///
/// **Thread safety:** value type; not shared. Its owner guards it with its lock.
internal struct TimerSlot {
    private enum State {
        /// No timer is wanted. Next: `.scheduling`.
        case disarmed
        /// A timer of this generation is being scheduled; its cancellable has not arrived. Next: any.
        case scheduling(UInt64)
        /// The timer of this generation is scheduled and can be cancelled. Next: any.
        case armed(UInt64, any Cancellable)
    }

    private var state = State.disarmed
    private var nextGeneration: UInt64 = 0

    /// Whether a timer is wanted (scheduling or armed).
    var isArmed: Bool {
        if case .disarmed = state { return false }
        return true
    }

    /// Starts a new generation; returns it and the previous timer's cancellable, to be cancelled.
    mutating func rearm() -> (generation: UInt64, previous: (any Cancellable)?) {
        let previous = disarm()
        let generation = nextGeneration
        nextGeneration &+= 1
        state = .scheduling(generation)
        return (generation, previous)
    }

    /// The scheduler returned the cancellable of `generation`. Returns it back if it is no longer
    /// wanted (superseded, fired or disarmed meanwhile): the owner must cancel it.
    mutating func scheduled(_ cancellable: any Cancellable, generation: UInt64) -> (any Cancellable)? {
        guard case .scheduling(let current) = state, current == generation else { return cancellable }
        state = .armed(generation, cancellable)
        return nil
    }

    /// The one-shot timer of `generation` fired. Returns whether it was current (then it is
    /// disarmed) and its cancellable, which the owner must cancel so that it does not repeat.
    mutating func firedOnce(generation: UInt64) -> (isCurrent: Bool, cancellable: (any Cancellable)?) {
        switch state {
        case .scheduling(let current) where current == generation:
            state = .disarmed
            return (true, nil)
        case .armed(let current, let cancellable) where current == generation:
            state = .disarmed
            return (true, cancellable)
        default:
            return (false, nil)
        }
    }

    /// Whether a repeating timer's fire of `generation` is current; it stays armed.
    func isCurrent(generation: UInt64) -> Bool {
        switch state {
        case .scheduling(let current), .armed(let current, _): current == generation
        case .disarmed: false
        }
    }

    /// Disarms; returns the armed timer's cancellable, to be cancelled.
    mutating func disarm() -> (any Cancellable)? {
        defer { state = .disarmed }
        if case .armed(_, let cancellable) = state { return cancellable }
        return nil
    }
}

extension Scheduler {
    /// Schedules the timer a ``TimerSlot`` keeps: `fire` runs `interval` from now. It is scheduled as a
    /// repeating timer (every `repeating`, `interval` if not given) only so that it can be cancelled:
    /// its owner cancels it when it fires, is re-armed or is cancelled. Call it outside the owner's
    /// lock, then hand the result to the slot under it (``TimerSlot/scheduled(_:generation:)``) and
    /// cancel what the slot hands back.
    func scheduleSlotTimer(
        after interval: SchedulerTimeType.Stride,
        repeating: SchedulerTimeType.Stride? = nil,
        options: SchedulerOptions?,
        _ fire: @escaping () -> Void
    ) -> any Cancellable {
        schedule(
            after: now.advanced(by: interval),
            interval: repeating ?? interval,
            tolerance: minimumTolerance,
            options: options,
            fire
        )
    }
}
