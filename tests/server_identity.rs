//! The authenticated identity reaches the backend: a `LocalFs` with an
//! `AccessPolicy` served with `unix` authentication lets each user do what
//! the policy grants that user's name, and refuses the rest with
//! `kXR_NotAuthorized` before touching the disk.

use std::sync::Arc;

use bytes::Bytes;
use xroot::client::{Client, OpenFlags};
use xroot::proto::ErrorCode;
use xroot::server::local::{Access, AccessPolicy};
use xroot::server::{Config, LocalFs, Server, UnixAuth};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_user_gets_what_the_policy_grants_its_authenticated_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("alice")).unwrap();
    std::fs::write(dir.path().join("shared.txt"), b"for everyone").unwrap();
    let fs = LocalFs::new(dir.path()).unwrap().with_policy(
        AccessPolicy::new(Access::ReadOnly)
            .allow("/alice", Access::None)
            .allow_user("alice", "/alice", Access::ReadWrite),
    );
    let config = Config {
        authenticator: Some(Arc::new(UnixAuth)),
        ..Config::default()
    };
    let server = Server::bind("127.0.0.1:0", fs, config).await.unwrap();
    let addr = server.handle().local_addr();
    tokio::spawn(server.serve());
    let url = |user: &str, path: &str| format!("root://{user}@{addr}/{path}");
    let client = Client::new();

    // alice writes in her directory and reads it back
    let f = client
        .open(&url("alice", "/alice/notes.txt"), OpenFlags::NEW)
        .await
        .unwrap();
    f.write_at(0, Bytes::from_static(b"mine")).await.unwrap();
    f.close().await.unwrap();
    let f = client
        .open(&url("alice", "/alice/notes.txt"), OpenFlags::READ)
        .await
        .unwrap();
    assert_eq!(&f.read_at(0, 10).await.unwrap()[..], b"mine");
    f.close().await.unwrap();

    // bob reads the shared file, but can neither read nor write alice's
    let f = client
        .open(&url("bob", "/shared.txt"), OpenFlags::READ)
        .await
        .unwrap();
    assert_eq!(&f.read_at(0, 100).await.unwrap()[..], b"for everyone");
    f.close().await.unwrap();
    let e = client
        .open(&url("bob", "/alice/notes.txt"), OpenFlags::READ)
        .await
        .unwrap_err();
    assert_eq!(e.server_code(), Some(ErrorCode::NOT_AUTHORIZED), "{e}");
    assert!(
        e.to_string()
            .contains("bob is not allowed to read /alice/notes.txt"),
        "{e}"
    );
    let e = client
        .open(&url("bob", "/bob.txt"), OpenFlags::NEW)
        .await
        .unwrap_err();
    assert_eq!(e.server_code(), Some(ErrorCode::NOT_AUTHORIZED), "{e}");
    assert!(!dir.path().join("bob.txt").exists());
    // alice cannot write outside her directory either
    let e = client
        .open(&url("alice", "/alice.txt"), OpenFlags::NEW)
        .await
        .unwrap_err();
    assert_eq!(e.server_code(), Some(ErrorCode::NOT_AUTHORIZED), "{e}");
}
