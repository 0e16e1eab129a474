import ArgumentParser
import Capture
import Foundation
import Plumbing
import Recorder

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Record cameras as a configuration file says (the daemon).",
        discussion: """
            Without --config, every camera present (and every camera plugged in later) is recorded \
            continuously in 60 s H.264 segments plus a timelapse still every 60 s; with no camera at \
            all, a synthetic test camera is recorded instead. With --config FILE (see \
            etc/vigil.example.toml) cameras, jobs (record, timelapse, snapshot), schedules and retention \
            come from the file; it is checked first and nothing starts if it has errors.

            Signals (trapped before anything else, so one during start-up is acted on once start-up is \
            done): SIGHUP re-reads the configuration (also done when the file changes): unchanged \
            cameras keep recording without a gap, changed ones are reconfigured, removed ones are \
            finalized; an invalid file is refused and the running configuration stays. SIGUSR1 saves a \
            snapshot from every camera with a snapshot job. SIGINT/SIGTERM finalize every open file and \
            exit 0. Under systemd (Type=notify) readiness, reloads, stopping and the watchdog are \
            reported through $NOTIFY_SOCKET.

            The web page and its HTTP API (cameras, recordings, clips, stills, /metrics) are served \
            where [http] listen says: http://127.0.0.1:8080 by default, said at start; "" turns the \
            server off; any address but loopback needs token_file (readable by its owner and group \
            only). Without a token only Host names of loopback and [http] allowed_hosts are served. \
            [http] max_clips, max_connections, max_connections_per_client, idle_timeout_seconds and \
            header_timeout_seconds bound what clients may hold; the open-file limit is raised to its \
            hard limit at start and a quarter of it is kept for recording. A port in use is said and \
            recording goes on. See docs/web-and-api.md for the API and the security model.

            With [archive] (an S3 bucket: url, endpoint, region, credentials_file, keep_local_days, \
            max_age_days, upload_rate, drain_seconds) every finished file is copied to the bucket, checked by its \
            SHA-256, through a queue kept in the index; local copies go after keep_local_days and \
            archived recordings play from the bucket. SIGINT/SIGTERM then upload what is still queued \
            (the segments they finalized too) for at most drain_seconds (default 10; 0: no wait) and \
            log what is left only on the disk, which the next start uploads first. See \
            docs/configuration.md and `vigil archive --help`.

            With [cluster] (a PostgreSQL database several nodes share: database, password_file, node, \
            lease_seconds) the nodes share the network cameras by lease: each is recorded by one live \
            node, and by another within the lease when that node dies; the database away never stops \
            recording. Each node copies its recordings into the database, and every node's page and \
            API show the whole site: every camera with its node, every node's recordings (another \
            node's file is fetched from it with the [http] token, or from its folder of the [archive] \
            bucket when it is down). VIGIL_NODE names the node, \
            --listen gives it its own address. A camera with node = "…" is recorded by that node \
            only. See `vigil cluster --help`.
            """
    )

    @Option(name: .shortAndLong, help: ArgumentHelp("The configuration file (TOML).", valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("Record into this directory instead of the configuration's storage root.", valueName: "dir"))
    var data: String?

    @Option(help: ArgumentHelp(
        "Serve the web page at this address instead of [http] listen (e.g. 127.0.0.1:8081; \"\" for none): several nodes of a cluster on one machine.",
        valueName: "host:port"))
    var listen: String?

    @Option(help: "Stop after this many seconds (default: run until stopped).")
    var duration: Double?

    @OptionGroup var global: GlobalOptions

    func validate() throws {
        if let duration { try checkOption("--duration", duration, in: 0.001...longestDuration, " seconds") }
    }

    func run() async throws {
        global.bootstrap()
        try await runRecorder {
            var options = RecorderService.Options(configurationPath: config, dataDirectory: data, durationSeconds: duration)
            options.listen = listen
            return options
        }
    }
}

/// Runs the recorder as `vigil run` and `vigil demo` do: stopped by signals, serving the web page.
/// Building the options is part of the run, so an error there is said the same way and exits 1.
func runRecorder(_ makeOptions: () throws -> RecorderService.Options) async throws {
    do {
        var options = try makeOptions()
        options.handlesSignals = true
        options.serveWebPage()
        try await RecorderService(options: options).run()
    } catch {
        Console.error("vigil: \(error)\n")
        throw ExitCode.failure
    }
}
