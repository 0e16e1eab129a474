import Metrics
import Prometheus
import Recorder
import WebServer

extension RecorderService.Options {
    /// Adds the web server (`[http]`) to the recorder's services, with Prometheus metrics: the
    /// metrics system is bootstrapped here, once per process (`vigil run` or `vigil demo`).
    mutating func serveWebPage() {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        extraServices = { WebServer.services($0, metrics: registry) }
    }
}
