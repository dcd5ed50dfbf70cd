//! TLS for client connections (rustls, with the ring provider pgwire is built with): a
//! certificate chain and a private key from PEM files, answered to PostgreSQL's SSLRequest
//! and to direct TLS connections (ALPN `postgresql`, PostgreSQL 17's sslnegotiation=direct).

use std::path::Path;
use std::sync::Arc;

use pgwire::tokio::tokio_rustls::rustls;
use pgwire::tokio::TlsAcceptor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The ALPN protocol name PostgreSQL clients offer for direct TLS.
const POSTGRESQL_ALPN: &[u8] = b"postgresql";

/// Loads the certificate chain and key and builds the acceptor every connection shares.
pub fn acceptor(certificate_file: &Path, key_file: &Path) -> Result<TlsAcceptor, String> {
    let certificates: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(certificate_file)
            .and_then(|certificates| certificates.collect())
            .map_err(|error| {
                format!("cannot read tls_cert_file={}: {error}", certificate_file.display())
            })?;
    if certificates.is_empty() {
        return Err(format!("tls_cert_file={} holds no certificate", certificate_file.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|error| format!("cannot read tls_key_file={}: {error}", key_file.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS: {error}"))?
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .map_err(|error| format!("TLS certificate and key do not match: {error}"))?;
    config.alpn_protocols = vec![POSTGRESQL_ALPN.to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
