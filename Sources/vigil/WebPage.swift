import Archive
import Cluster
import Metrics
import Prometheus
import Recorder
import ServiceLifecycle
import WebServer

extension RecorderService.Options {
    /// Adds the cluster (`[cluster]`: the node's heartbeat and leases, and its shared catalogue), the archive (`[archive]`) and the web server (`[http]`) to the recorder's services,
    /// with Prometheus metrics: the metrics system is bootstrapped here, once per process
    /// (`vigil run` or `vigil demo`). The archive stops after the storage keeper has indexed the
    /// cameras' last files, so it can upload them before the process ends (and, being later than
    /// the web server, only once nothing reads archived files through it).
    mutating func serveWebPage() {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        openSharedCatalog = { cluster in try PostgresCatalog(configuration: cluster.clientConfiguration(), node: cluster.node, connections: 1) }
        extraServices = { opened in
            var services = RecorderService.ExtraServices()
            let contact = DatabaseContact()
            if let cluster = opened.configuration.cluster {
                let token = opened.configuration.http.token
                services.stoppingFirst.append(ClusterService(
                    settings: cluster, url: opened.configuration.http.isEnabled ? opened.configuration.http.pageAddress : "", leases: opened.leases,
                    contact: contact, witnesses: { await WebServer.askWitnesses(at: $0, token: token) }
                ) {
                    await opened.supervisor.status().map(\.cameraID)
                })
            }
            var reader: ArchiveReader?
            if let settings = opened.configuration.archive, let storage = opened.storage {
                let archive = ArchiveService(settings: settings, root: opened.root, index: opened.index, storage: storage)
                services.stoppingAfterStorage.append(archive)
                reader = archive.reader
            }
            services.stoppingFirst += WebServer.services(opened, metrics: registry, archive: reader, site: opened.configuration.cluster.map { SiteView(settings: $0, contact: contact) })
            return services
        }
    }
}
