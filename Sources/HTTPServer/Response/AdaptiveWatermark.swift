/// The high and low watermarks of one streaming response, adapted to how fast its reader takes bytes.
///
/// A fast reader wants large batches (one `send(2)` per high watermark); a slow or stalled one must not pin
/// that much memory, since whatever the kernel refuses stays in user space. So, when ``Settings/adapts`` is
/// on, a stream starts at the minimum; after every flush the kernel took whole while nothing waited in the
/// kernel for the peer's window (asked only after a flush of at least half the high watermark), the high
/// watermark doubles, up to ``unprovenHighBytes`` until the kernel
/// has taken ``provenReaderBytes`` of the stream and up to the maximum after that; a flush that leaves
/// bytes behind (in user space or unsent in the kernel) drops it back to the minimum. The storage reserved
/// for the next batch follows: a batch at the cap (plus slack for the value that crosses it) while the
/// reader keeps up, one at the minimum while it lags.
///
/// It knows nothing of sockets: the connection reports what the kernel took and whether the reader kept up,
/// and reads the thresholds. Whether the stream is writable is not kept here but in ``StreamStateMachine``.
///
/// **Ownership:** Held by its stream's ``StreamStateMachine``.
///
/// **Thread safety:** Value type; not shared.
struct AdaptiveWatermark: Equatable {
    /// The bounds a server configures (see ``Server/Configuration``), normalised.
    struct Settings: Equatable {
        /// The largest high watermark, in bytes (at least 1).
        let maximumBytes: Int
        /// The high watermark a stream starts with and falls back to (1 … ``maximumBytes``).
        let minimumBytes: Int
        /// The low watermark before it is capped at half the high one, in bytes.
        let lowBytes: Int
        /// Whether the high watermark follows the reader; off, it is always ``maximumBytes``.
        let adapts: Bool

        init(maximumBytes: Int, minimumBytes: Int, lowBytes: Int, adapts: Bool) {
            self.maximumBytes = max(1, maximumBytes)
            self.minimumBytes = max(1, min(minimumBytes, self.maximumBytes))
            self.lowBytes = max(0, lowBytes)
            self.adapts = adapts
        }

        init(_ configuration: Server.Configuration) {
            self.init(
                maximumBytes: configuration.highWatermarkBytes,
                minimumBytes: configuration.minimumHighWatermarkBytes,
                lowBytes: configuration.lowWatermarkBytes,
                adapts: configuration.adaptsHighWatermarkToReader
            )
        }
    }

    /// Until the kernel has taken this much of a stream, its high watermark stays at or below
    /// ``unprovenHighBytes``. Loopback and LAN kernels buffer a few MiB per socket (send queue plus the
    /// peer's receive buffer) even for a reader that never reads, so only bytes beyond that prove the reader
    /// is really consuming; a stalled reader thus never gets full-size batches.
    static let provenReaderBytes = 8 * 1024 * 1024
    /// The high watermark cap before ``provenReaderBytes``.
    static let unprovenHighBytes = 16 * 1024

    let settings: Settings
    /// Buffered bytes at or above which the stream is not writable.
    private(set) var highBytes: Int
    /// Buffered bytes at or below which a not-writable stream is writable again (at most half of ``highBytes``).
    private(set) var lowBytes: Int
    /// Bytes of this stream the kernel has taken.
    private(set) var bytesTaken = 0
    /// The storage the outbound buffer gets in one go for the next batch; 0 when the watermark does not adapt.
    private(set) var reservedBytes = 0

    /// The watermarks of a new stream.
    init(starting settings: Settings) {
        self.settings = settings
        if settings.adapts {
            highBytes = settings.minimumBytes
            reservedBytes = settings.minimumBytes &+ settings.minimumBytes / 4
        } else {
            highBytes = settings.maximumBytes
        }
        lowBytes = min(settings.lowBytes, highBytes / 2)
    }

    /// The kernel took `byteCount` more bytes of the stream.
    mutating func taken(_ byteCount: Int) {
        bytesTaken &+= byteCount
    }

    /// A flush of the stream ended: the kernel took `sent` bytes and `buffered` stayed in user space.
    /// `readerKeptUp`: nothing waits unsent in the kernel (asked only when it matters).
    ///
    /// Bytes left in user space always mean the reader lags. A flush that left none but sent less than half
    /// the high watermark (a trickle, such as a few small events a turn) counts as kept up without asking the
    /// kernel: its figure would cost a system call per send, and a reader that stops reading is still caught
    /// when the kernel refuses bytes, which is when they start to pin memory here.
    mutating func flushed(sent: Int, buffered: Int, readerKeptUp: () -> Bool) {
        if buffered > 0 {
            flushed { false }
        } else if sent < highBytes / 2 {
            flushed { true }
        } else {
            flushed(readerKeptUp: readerKeptUp)
        }
    }

    /// A flush of the stream ended. `readerKeptUp`: it left nothing behind, in user space or unsent in the
    /// kernel (asked only when the watermark adapts).
    mutating func flushed(readerKeptUp: () -> Bool) {
        guard settings.adapts else { return }
        if readerKeptUp() {
            let cap =
                bytesTaken >= Self.provenReaderBytes
                ? settings.maximumBytes : min(settings.maximumBytes, max(settings.minimumBytes, Self.unprovenHighBytes))
            highBytes = min(cap, max(settings.minimumBytes, highBytes.multipliedReportingOverflow(by: 2).partialValue))
            reservedBytes = cap &+ cap / 4
        } else {
            highBytes = settings.minimumBytes
            reservedBytes = settings.minimumBytes &+ settings.minimumBytes / 4
        }
        lowBytes = min(settings.lowBytes, highBytes / 2)
    }

    /// Whether storage the kernel refused should be cut to what is pending: the reader has not proven it
    /// reads, so the batch sized for a reader keeping up is not kept for it.
    var keepsStorageTight: Bool {
        settings.adapts && bytesTaken < Self.provenReaderBytes
    }
}
