//! How the relay reaches PostgreSQL: the one place that opens its connections (outbox
//! reads and marks, LISTEN, gauges, pruning, Kafka mode's leases, the operator's
//! commands), in plain text or in TLS as the URL's `sslmode` says. Must never fall back to
//! plain text when TLS was asked for, nor accept a server certificate it cannot verify
//! (there is no "encrypt but trust anyone" mode: give the server's CA with --pg-ca-file).

use crate::{Error, PgArgs};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;
use tokio_postgres::config::SslMode;
use tokio_postgres::{AsyncMessage, Client, Config};
use tokio_postgres_rustls::MakeRustlsConnect;

/// Most certificates a --pg-ca-file may hold (a CA bundle is a few hundred).
const MAX_CA_CERTS: usize = 10_000;

/// A PostgreSQL to connect to: the URL and, when `sslmode=require`, the TLS to use.
#[derive(Clone)]
pub struct Pg {
    pub url: String,
    tls: Option<MakeRustlsConnect>,
}

/// A connection's notifications (LISTEN) or the error that ended it.
pub type Notes = UnboundedSender<Result<AsyncMessage, tokio_postgres::Error>>;

impl Pg {
    /// Checked before anything connects: a URL that does not parse, an `sslmode` the relay
    /// cannot honour, or a CA file it cannot read is an error at start.
    pub fn new(a: &PgArgs) -> Result<Pg, Error> {
        let cfg: Config = a.pg.parse().map_err(|e| format!("--pg: {e}"))?;
        let tls = match (cfg.get_ssl_mode(), &a.pg_ca_file) {
            (SslMode::Require, ca) => Some(MakeRustlsConnect::new(client_config(ca.as_deref())?)),
            (_, Some(_)) => return Err("--pg-ca-file is for TLS: add sslmode=require to --pg".into()),
            // prefer (the default) and disable: plain text, as libpq's prefer gets from a
            // server without TLS. TLS only when it is required, and then verified.
            _ => None,
        };
        Ok(Pg { url: a.pg.clone(), tls })
    }

    /// Connect and drive the connection in a task.
    pub async fn connect(&self) -> Result<Client, Error> {
        self.open(None).await
    }

    /// Connect; the connection's notifications go to `notes` (and its end, as an error).
    pub async fn open(&self, notes: Option<Notes>) -> Result<Client, Error> {
        match &self.tls {
            None => {
                let (c, conn) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await?;
                tokio::spawn(drive(conn, notes));
                Ok(c)
            }
            Some(tls) => {
                let (c, conn) = tokio_postgres::connect(&self.url, tls.clone()).await.map_err(|e| {
                    format!(
                        "{} (TLS, as sslmode=require asks; the server's certificate is verified against \
                         --pg-ca-file and the system's roots)",
                        chain(&e)
                    )
                })?;
                tokio::spawn(drive(conn, notes));
                Ok(c)
            }
        }
    }
}

/// An error and its causes ("error performing TLS handshake: invalid peer certificate:
/// UnknownIssuer"): tokio-postgres's own text leaves the cause out.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    for _ in 0..8 {
        let Some(c) = next else { break };
        s.push_str(": ");
        s.push_str(&c.to_string());
        next = c.source();
    }
    s
}

/// Poll a connection to its end, passing notifications on when asked.
async fn drive<S, T>(mut conn: tokio_postgres::Connection<S, T>, notes: Option<Notes>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        match futures_util::future::poll_fn(|cx| conn.poll_message(cx)).await {
            Some(Ok(m)) => {
                if let Some(n) = &notes {
                    if n.send(Ok(m)).is_err() {
                        return;
                    }
                }
            }
            Some(Err(e)) => {
                match &notes {
                    Some(n) => drop(n.send(Err(e))),
                    None => eprintln!("baton relay: postgres connection: {e}"),
                }
                return;
            }
            None => return,
        }
    }
}

/// TLS that verifies the server against the system's roots and the certificates of `ca`.
fn client_config(ca: Option<&str>) -> Result<rustls::ClientConfig, Error> {
    let mut roots = rustls::RootCertStore::empty();
    // The system's roots: a store that cannot be read adds nothing (a private CA comes
    // from --pg-ca-file).
    for c in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(c);
    }
    if let Some(path) = ca {
        let mut n = 0;
        for c in CertificateDer::pem_file_iter(path).map_err(|e| format!("--pg-ca-file {path}: {e}"))? {
            let c = c.map_err(|e| format!("--pg-ca-file {path}: {e}"))?;
            roots.add(c).map_err(|e| format!("--pg-ca-file {path}: {e}"))?;
            n += 1;
            if n > MAX_CA_CERTS {
                return Err(format!("--pg-ca-file {path}: more than {MAX_CA_CERTS} certificates").into());
            }
        }
        if n == 0 {
            return Err(format!("--pg-ca-file {path}: no PEM certificate in it").into());
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
