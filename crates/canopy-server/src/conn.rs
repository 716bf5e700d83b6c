//! The connection loop: hyper's HTTP/1 server on every accepted connection,
//! with a deadline on each request head.
//!
//! A client gets [`Config::header_timeout`](crate::Config::header_timeout)
//! from the moment the server waits for a request head (a new connection, or
//! one kept alive after a reply) until the head's last line; past it hyper
//! closes the connection without a reply. The deadline
//! covers the head only: a body under way, a reply being written (a change
//! stream, a streamed read) and an upgraded websocket have none.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::Request;
use axum::serve::Listener;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::watch;

use crate::PeerAddr;

/// Serves `routes` on the connections `listener` accepts until `stop`
/// resolves; then accepts no more, lets every connection finish the request
/// it serves (hyper's graceful shutdown) and returns when all are closed.
pub(crate) async fn serve<L>(mut listener: L, routes: Router, header_timeout: Duration, stop: impl Future<Output = ()>)
where
    L: Listener<Addr = SocketAddr>,
{
    let (closing, closing_rx) = watch::channel(false);
    // Every connection task holds a receiver; `closed()` is all of them gone.
    let (all_done, done_rx) = watch::channel(());
    tokio::pin!(stop);
    loop {
        let (io, peer) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let routes = routes.clone();
        let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(PeerAddr(peer)));
            tower_service::Service::call(&mut routes.clone(), req)
        });
        let (mut closing, done) = (closing_rx.clone(), done_rx.clone());
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
            let conn = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
            tokio::pin!(conn);
            let stopping = async move { closing.wait_for(|c| *c).await.is_ok() };
            let shut = tokio::select! {
                _ = conn.as_mut() => false,
                _ = stopping => true,
            };
            if shut {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
            drop(done);
        });
    }
    closing.send_replace(true);
    drop(done_rx);
    drop(listener);
    all_done.closed().await;
}
