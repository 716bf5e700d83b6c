//! TLS through rustls (the ring provider): the server's certificate and key
//! from PEM files, and a listener that hands axum connections whose
//! handshake is done.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::ServeError;

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn pem_error(what: &str, file: &Path, e: &pem::Error) -> ServeError {
    let why = match e {
        pem::Error::Io(io) => format!("cannot read it: {io}"),
        pem::Error::NoItemsFound => format!("it holds no PEM {what}"),
        pem::Error::MissingSectionEnd { .. } => "a PEM section has no END line".into(),
        pem::Error::IllegalSectionStart { .. } => "a PEM BEGIN line is malformed".into(),
        pem::Error::Base64Decode(_) => "a PEM section is not valid base64".into(),
        other => format!("it is not a PEM {what} file: {other}"),
    };
    ServeError::Tls(format!("TLS {what} file {}: {why}", file.display()))
}

/// The TLS setup of a server with the certificate chain in `cert` (PEM, the
/// server's certificate first) and its private key in `key` (PEM: PKCS#8,
/// PKCS#1 or SEC1). It speaks HTTP/1.1 only (ALPN `http/1.1`).
///
/// # Errors
/// [`ServeError::Tls`] naming the file that cannot be read or holds no
/// certificate or key, or saying that the key does not match the certificate.
pub fn config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, ServeError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| pem_error("certificate", cert, &e))?;
    if chain.is_empty() {
        return Err(pem_error("certificate", cert, &pem::Error::NoItemsFound));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| pem_error("private key", key, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServeError::Tls(format!("TLS setup: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            let why = match e {
                rustls::Error::InconsistentKeys(_) => "the key is not the certificate's".to_string(),
                other => other.to_string(),
            };
            ServeError::Tls(format!("TLS certificate {} with key {}: {why}", cert.display(), key.display()))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Connections after their TLS handshake. Handshakes run in tasks of their
/// own, so a slow or silent client delays no other.
pub(crate) struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
}

impl TlsListener {
    /// # Errors
    /// The listener's address cannot be read.
    pub(crate) fn new(tcp: TcpListener, config: Arc<ServerConfig>) -> std::io::Result<TlsListener> {
        let addr = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(64);
        tokio::spawn(accept_loop(tcp, TlsAcceptor::from(config), tx));
        Ok(TlsListener { ready, addr })
    }
}

/// Accepts until the [`TlsListener`] is dropped.
async fn accept_loop(tcp: TcpListener, acceptor: TlsAcceptor, tx: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>) {
    loop {
        let accepted = tokio::select! {
            r = tcp.accept() => r,
            () = tx.closed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // A connection reset before it was accepted concerns that
                // client only; anything else (no file descriptors left) is
                // waited out, as axum's own listener does.
                use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
                if !matches!(e.kind(), ConnectionAborted | ConnectionRefused | ConnectionReset) {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (acceptor, tx) = (acceptor.clone(), tx.clone());
        tokio::spawn(async move {
            if let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                let _ = tx.send((tls, peer)).await;
            }
        });
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept loop holds a sender while this listener lives.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let e = config(&missing, &junk).unwrap_err().to_string();
        assert!(e.contains("certificate file") && e.contains("missing.pem") && e.contains("cannot read"), "{e}");
        let e = config(&junk, &junk).unwrap_err().to_string();
        assert!(e.contains("certificate file") && e.contains("junk.pem") && e.contains("no PEM"), "{e}");
    }
}
