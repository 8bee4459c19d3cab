//! What the object-store benches share: our server on a directory, on a
//! runtime of its own, and the runtime the clients run on.

use tokio::runtime::Runtime;
use xroot_server::{Config, LocalFs, Server};

/// Our server (`LocalFs` on `dir`) on a one-worker runtime of its own, so
/// that the clients' work does not slow it; the runtime (keep it) and the
/// port on 127.0.0.1.
pub fn serve(dir: &std::path::Path) -> (Runtime, u16) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(async {
        Server::bind("127.0.0.1:0", LocalFs::new(dir).unwrap(), Config::default())
            .await
            .unwrap()
    });
    let port = server.local_addr().port();
    rt.spawn(server.serve());
    (rt, port)
}

/// The clients' runtime: two workers, as the machine has two cores.
pub fn clients() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
