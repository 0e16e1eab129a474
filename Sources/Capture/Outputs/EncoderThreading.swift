import Foundation
import Synchronization

/// How many threads each H.264 encoder gets when the configuration leaves it to Vigil
/// (`EncoderSettings.threads` 0, the default).
///
/// x264's frame threading lets one encoder use several cores, at a price: every thread holds
/// frames of its own (about 11 MB more for one 720p camera at x264's automatic three threads on
/// two cores) and waits on the others (measured at 720p ultrafast: 7 % more CPU per frame in real time, 25 % as fast as possible).
/// When H.264 cameras are at least as many as cores, the cameras already keep every core busy,
/// so each encoder gets one thread; with fewer cameras the cores are shared out among them.
public enum EncoderThreading {
    /// Threads for each of `encoders` encoders on `cores` cores.
    public static func threads(encoders: Int, cores: Int) -> Int {
        max(1, cores / max(1, encoders))
    }

    /// Threads for an encoder opened now: the configured number, or the choice above for the
    /// H.264 movie outputs that exist in this process (every camera that records H.264, in
    /// its schedule or not, since any of them may start encoding at any time).
    static func threads(configured: Int) -> Int {
        configured > 0 ? configured
            : threads(encoders: h264Outputs.load(ordering: .relaxed), cores: ProcessInfo.processInfo.activeProcessorCount)
    }

    /// H.264 movie outputs alive in this process (`SegmentedMovieOutput` counts itself in and out).
    static let h264Outputs = Atomic<Int>(0)
}
