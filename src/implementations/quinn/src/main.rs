//! Downloads one URL over QUIC with quinn (hq-interop or HTTP/3 via h3-quinn), writing a
//! TLS keylog (rustls `KeyLogFile`, which reads `SSLKEYLOGFILE`) and a qlog (quinn's `qlog`
//! feature) into a directory.

use std::fs::File;
use std::io::BufWriter;
use std::net::ToSocketAddrs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use bytes::Buf;
use quinn::crypto::rustls::QuicClientConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::AsyncWriteExt;

const ALPN_HQ: &[u8] = b"hq-interop";
const ALPN_H3: &[u8] = b"h3";
const USAGE: &str = "usage: quinn-client [--alpn h3|hq] [--keylog FILE] [--qlog-dir DIR] \
                     [--download-dir DIR] [--timeout SECONDS] [--ack-frequency] [--initial-mtu BYTES] [--no-pmtud] \
                     URL | --version";

struct Options {
    url: url::Url,
    app_protocol: String,
    keylog: Option<PathBuf>,
    qlog_dir: Option<PathBuf>,
    download_dir: PathBuf,
    timeout: Duration,
    // Off by default: the testbed measures each implementation's default ACK behaviour.
    ack_frequency: bool,
    // The papers' conditions (quicack.testbed.conditions): the UDP payload size before path-MTU discovery (None:
    // quinn's 1200) and whether discovery runs.
    initial_mtu: Option<u16>,
    pmtud: bool,
}

fn parse_args() -> anyhow::Result<Option<Options>> {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let mut app_protocol = "hq".to_string();
    let mut keylog = None;
    let mut qlog_dir = None;
    let mut download_dir = PathBuf::from(".");
    let mut timeout = Duration::from_secs(30);
    let mut ack_frequency = false;
    let mut initial_mtu = None;
    let mut pmtud = true;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--version" => return Ok(None),
            "--alpn" => app_protocol = value()?,
            "--keylog" => keylog = Some(PathBuf::from(value()?)),
            "--qlog-dir" => qlog_dir = Some(PathBuf::from(value()?)),
            "--download-dir" => download_dir = PathBuf::from(value()?),
            "--timeout" => timeout = Duration::from_secs_f64(value()?.parse()?),
            "--ack-frequency" => ack_frequency = true,
            "--initial-mtu" => initial_mtu = Some(value()?.parse()?),
            "--no-pmtud" => pmtud = false,
            _ if arg.starts_with("--") => bail!("unknown option {arg}\n{USAGE}"),
            _ => url = Some(url::Url::parse(&arg)?),
        }
    }
    let url = url.ok_or_else(|| anyhow!("{USAGE}"))?;
    Ok(Some(Options { url, app_protocol, keylog, qlog_dir, download_dir, timeout, ack_frequency, initial_mtu, pmtud }))
}

fn main() {
    let (options, runtime) = quicack_quinn_client::start(parse_args(), |options: &Options| options.keylog.as_deref());
    let result = runtime.block_on(async {
        tokio::time::timeout(options.timeout, run(&options))
            .await
            .unwrap_or_else(|_| Err(anyhow!("timed out after {:?}", options.timeout)))
    });
    if let Err(err) = result {
        eprintln!("download failed: {err:#}");
        std::process::exit(1);
    }
}

async fn run(options: &Options) -> anyhow::Result<()> {
    let alpn = match options.app_protocol.as_str() {
        "hq" => ALPN_HQ,
        "h3" => ALPN_H3,
        other => bail!("unknown application protocol {other:?} (want h3 or hq)"),
    };
    let host = options.url.host_str().context("URL without host")?;
    let port = options.url.port().unwrap_or(443);
    let server_addr = (host, port).to_socket_addrs()?.next().context("host did not resolve")?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    tls.key_log = Arc::new(rustls::KeyLogFile::new());

    let mut transport = quinn::TransportConfig::default();
    // One datagram per packet on the wire and in captures, whatever the interface's offloads.
    transport.enable_segmentation_offload(false);
    if let Some(mtu) = options.initial_mtu {
        transport.initial_mtu(mtu);
    }
    if !options.pmtud {
        transport.mtu_discovery_config(None);
    }
    if options.ack_frequency {
        // draft-ietf-quic-ack-frequency: ask the server for fewer ACKs (ACK_FREQUENCY frames); needs a peer
        // that sends min_ack_delay (quinn always does).
        transport.ack_frequency_config(Some(quinn::AckFrequencyConfig::default()));
    }
    if let Some(qlog_dir) = &options.qlog_dir {
        std::fs::create_dir_all(qlog_dir)?;
        // quinn has no per-connection file naming of its own; this client makes one connection.
        let qlog_path = qlog_dir.join(format!("quinn_{}_client.sqlog", std::process::id()));
        let mut qlog = quinn::QlogConfig::default();
        qlog.writer(Box::new(BufWriter::new(File::create(&qlog_path)?)))
            .title(Some(format!("quinn {} client", env!("QUINN_VERSION"))));
        transport.qlog_stream(qlog.into_stream());
    }
    let mut client_config = quinn::ClientConfig::new(Arc::new(QuicClientConfig::try_from(tls)?));
    client_config.transport_config(Arc::new(transport));

    let bind_addr: std::net::SocketAddr =
        if server_addr.is_ipv4() { "0.0.0.0:0".parse()? } else { "[::]:0".parse()? };
    let endpoint = quinn::Endpoint::client(bind_addr)?;
    let conn = endpoint.connect_with(client_config, server_addr, host)?.await?;

    let file_name = Path::new(options.url.path()).file_name().context("URL path has no file name")?;
    let out_path = options.download_dir.join(file_name);
    // The body goes to a .part file that becomes out_path only when complete, so that a file
    // at out_path always means a finished download.
    let part_path = {
        let mut name = out_path.clone().into_os_string();
        name.push(".part");
        PathBuf::from(name)
    };
    let mut result = match alpn {
        ALPN_HQ => download_hq(&conn, &options.url, &part_path).await,
        _ => download_h3(conn.clone(), &options.url, &part_path).await,
    };
    result = match result {
        Ok(()) => std::fs::rename(&part_path, &out_path).map_err(Into::into),
        Err(err) => {
            let _ = std::fs::remove_file(&part_path);
            Err(err)
        }
    };
    conn.close(0u32.into(), b"done");
    // Lets the CONNECTION_CLOSE go out and the qlog stream be dropped (flushed) before exit.
    endpoint.wait_idle().await;
    result
}

async fn download_hq(conn: &quinn::Connection, url: &url::Url, out_path: &Path) -> anyhow::Result<()> {
    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(format!("GET {}\r\n", url.path()).as_bytes()).await?;
    send.finish()?;
    let mut out = tokio::fs::File::create(out_path).await?;
    let mut received = 0usize;
    while let Some(chunk) = recv.read_chunk(usize::MAX, true).await? {
        received += chunk.bytes.len();
        out.write_all(&chunk.bytes).await?;
    }
    out.flush().await?;
    if received == 0 {
        bail!("empty response");
    }
    Ok(())
}

async fn download_h3(conn: quinn::Connection, url: &url::Url, out_path: &Path) -> anyhow::Result<()> {
    let (mut driver, mut send_request) = h3::client::new(h3_quinn::Connection::new(conn)).await?;
    let drive = tokio::spawn(async move { driver.wait_idle().await });
    let request = http::Request::get(url.as_str()).body(())?;
    let mut stream = send_request.send_request(request).await?;
    stream.finish().await?;
    let response = stream.recv_response().await?;
    if response.status() != http::StatusCode::OK {
        bail!("HTTP status {}", response.status());
    }
    let mut out = tokio::fs::File::create(out_path).await?;
    while let Some(mut chunk) = stream.recv_data().await? {
        while chunk.has_remaining() {
            let piece = chunk.chunk();
            out.write_all(piece).await?;
            let len = piece.len();
            chunk.advance(len);
        }
    }
    out.flush().await?;
    drop(send_request);
    drive.abort();
    Ok(())
}

/// The testbed's servers use self-signed certificates; signatures are still checked so that
/// the handshake does the same cryptographic work as with a verified certificate.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
