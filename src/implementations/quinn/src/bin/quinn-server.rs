//! A minimal hq-interop (HTTP/0.9 over QUIC) server with quinn, for loopback captures of quinn ↔ quinn:
//! reads "GET /path\r\n" on each bidirectional stream and sends the file ROOT/path. Certificate: a fresh
//! self-signed one from rcgen (as quinn's examples do), or a PEM chain and key with --cert/--key (the testbed's
//! certificates). Writes a TLS keylog with --keylog, a qlog with --qlog-dir, and can ask the client to change
//! its ACK frequency (draft-ietf-quic-ack-frequency) with --ack-frequency, or with a set request: any of
//! --ack-eliciting-threshold N (ACK after more than N ack-eliciting packets: ACK ratio N + 1),
//! --max-ack-delay-ms D and --reordering-threshold R (1: ACK out-of-order packets at once, 0: never) turns the
//! extension on with quinn's defaults (1, the client's own max_ack_delay, 2) for the others. quinn clamps the
//! requested delay to at most max(RTT, 25 ms) and at least the client's min_ack_delay.
//! The sender's congestion controller: --congestion-control newreno|cubic|bbr (quinn's `congestion` module;
//! default cubic, quinn's own). quinn always paces (its token-bucket `Pacer`, 1.25 × cwnd per RTT, bursts of at
//! least 10 packets): there is no setting to switch that off.

use std::fs::File;
use std::io::LineWriter;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use quinn::crypto::rustls::QuicServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const USAGE: &str = "usage: quinn-server [--listen ADDR:PORT] [--root DIR] [--keylog FILE] [--qlog-dir DIR] \
                     [--cert PEM --key PEM] [--ack-frequency] [--ack-eliciting-threshold N] \
                     [--max-ack-delay-ms D] [--reordering-threshold R] [--connections N] \
                     [--congestion-control newreno|cubic|bbr] [--initial-mtu BYTES] [--no-pmtud] | --version";

struct Options {
    listen: SocketAddr,
    root: PathBuf,
    keylog: Option<PathBuf>,
    qlog_dir: Option<PathBuf>,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    ack_frequency: bool,
    ack_eliciting_threshold: Option<u32>,
    max_ack_delay_ms: Option<f64>,
    reordering_threshold: Option<u32>,
    connections: Option<u64>,
    congestion_control: Option<String>,
    // The papers' conditions (quicack.testbed.conditions): the UDP payload size before path-MTU discovery (None:
    // quinn's 1200) and whether discovery runs.
    initial_mtu: Option<u16>,
    pmtud: bool,
}

fn parse_args() -> anyhow::Result<Option<Options>> {
    let mut args = std::env::args().skip(1);
    let mut options = Options {
        listen: "127.0.0.1:5600".parse()?,
        root: PathBuf::from("."),
        keylog: None,
        qlog_dir: None,
        cert: None,
        key: None,
        ack_frequency: false,
        ack_eliciting_threshold: None,
        max_ack_delay_ms: None,
        reordering_threshold: None,
        connections: None,
        congestion_control: None,
        initial_mtu: None,
        pmtud: true,
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--version" => return Ok(None),
            "--listen" => options.listen = value()?.parse()?,
            "--root" => options.root = PathBuf::from(value()?),
            "--keylog" => options.keylog = Some(PathBuf::from(value()?)),
            "--qlog-dir" => options.qlog_dir = Some(PathBuf::from(value()?)),
            "--cert" => options.cert = Some(PathBuf::from(value()?)),
            "--key" => options.key = Some(PathBuf::from(value()?)),
            "--ack-frequency" => options.ack_frequency = true,
            "--ack-eliciting-threshold" => options.ack_eliciting_threshold = Some(value()?.parse()?),
            "--max-ack-delay-ms" => options.max_ack_delay_ms = Some(value()?.parse()?),
            "--reordering-threshold" => options.reordering_threshold = Some(value()?.parse()?),
            "--connections" => options.connections = Some(value()?.parse()?),
            "--congestion-control" => options.congestion_control = Some(value()?),
            "--initial-mtu" => options.initial_mtu = Some(value()?.parse()?),
            "--no-pmtud" => options.pmtud = false,
            _ => bail!("unknown argument {arg}\n{USAGE}"),
        }
    }
    if options.cert.is_some() != options.key.is_some() {
        bail!("--cert and --key go together\n{USAGE}");
    }
    Ok(Some(options))
}

fn main() {
    let (options, runtime) = quicack_quinn_client::start(parse_args(), |options: &Options| options.keylog.as_deref());
    if let Err(err) = runtime.block_on(run(&options)) {
        eprintln!("quinn-server: {err:#}");
        std::process::exit(1);
    }
}

async fn run(options: &Options) -> anyhow::Result<()> {
    let (chain, key) = match (&options.cert, &options.key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .with_context(|| format!("reading {}", cert.display()))?
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("parsing {}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_file(key).with_context(|| format!("reading {}", key.display()))?;
            (chain, key)
        }
        _ => {
            let certified = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
            let cert = certified.cert.der().clone();
            (vec![cert], PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(certified.key_pair.serialize_der())))
        }
    };

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    tls.alpn_protocols = vec![b"hq-interop".to_vec()];
    tls.key_log = Arc::new(rustls::KeyLogFile::new());

    let mut transport = quinn::TransportConfig::default();
    // One datagram per packet on the wire and in captures, as in the client.
    transport.enable_segmentation_offload(false);
    if let Some(mtu) = options.initial_mtu {
        transport.initial_mtu(mtu);
    }
    if !options.pmtud {
        transport.mtu_discovery_config(None);
    }
    if let Some(name) = &options.congestion_control {
        transport.congestion_controller_factory(congestion_controller(name)?);
    }
    if let Some(ack_frequency) = ack_frequency_config(options) {
        transport.ack_frequency_config(Some(ack_frequency));
    }
    if let Some(qlog_dir) = &options.qlog_dir {
        // One trace for the endpoint: the testbed serves one connection per server process. Line-buffered
        // (one JSON-SEQ record per line), so the file is complete even when the server is killed.
        std::fs::create_dir_all(qlog_dir)?;
        let qlog_path = qlog_dir.join(format!("quinn_{}_server.sqlog", std::process::id()));
        let mut qlog = quinn::QlogConfig::default();
        qlog.writer(Box::new(LineWriter::new(File::create(&qlog_path)?)))
            .title(Some("quinn-server".into()));
        transport.qlog_stream(qlog.into_stream());
    }
    let mut server_config = quinn::ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(tls)?));
    server_config.transport_config(Arc::new(transport));
    let endpoint = quinn::Endpoint::server(server_config, options.listen)?;
    eprintln!("quinn-server: listening on {}", endpoint.local_addr()?);

    let mut served = 0u64;
    while let Some(incoming) = endpoint.accept().await {
        let root = options.root.clone();
        let handle = tokio::spawn(async move {
            if let Err(err) = serve_connection(incoming, &root).await {
                eprintln!("quinn-server: connection: {err:#}");
            }
        });
        served += 1;
        if options.connections.is_some_and(|limit| served >= limit) {
            let _ = handle.await;
            break;
        }
    }
    endpoint.wait_idle().await;
    Ok(())
}

/// quinn's congestion controller of that name, with quinn's default settings (initial window 10 packets).
fn congestion_controller(name: &str) -> anyhow::Result<Arc<dyn quinn::congestion::ControllerFactory + Send + Sync>> {
    Ok(match name {
        "newreno" => Arc::new(quinn::congestion::NewRenoConfig::default()),
        "cubic" => Arc::new(quinn::congestion::CubicConfig::default()),
        "bbr" => Arc::new(quinn::congestion::BbrConfig::default()),
        other => bail!("unknown congestion controller {other:?} (newreno, cubic or bbr)"),
    })
}

/// The ACK_FREQUENCY request of the command line, or None when the extension stays off.
fn ack_frequency_config(options: &Options) -> Option<quinn::AckFrequencyConfig> {
    let requested = options.ack_eliciting_threshold.is_some()
        || options.max_ack_delay_ms.is_some()
        || options.reordering_threshold.is_some();
    if !(options.ack_frequency || requested) {
        return None;
    }
    let mut config = quinn::AckFrequencyConfig::default();
    if let Some(threshold) = options.ack_eliciting_threshold {
        config.ack_eliciting_threshold(threshold.into());
    }
    if let Some(delay_ms) = options.max_ack_delay_ms {
        config.max_ack_delay(Some(std::time::Duration::from_secs_f64(delay_ms / 1000.0)));
    }
    if let Some(threshold) = options.reordering_threshold {
        config.reordering_threshold(threshold.into());
    }
    Some(config)
}

async fn serve_connection(incoming: quinn::Incoming, root: &Path) -> anyhow::Result<()> {
    let conn = incoming.await?;
    loop {
        let (mut send, mut recv) = match conn.accept_bi().await {
            Ok(stream) => stream,
            Err(quinn::ConnectionError::ApplicationClosed(_)) => break,
            Err(err) => return Err(err.into()),
        };
        let request = recv.read_to_end(4096).await?;
        let file = request_path(&request, root)?;
        let body = tokio::fs::read(&file).await.with_context(|| format!("reading {}", file.display()))?;
        send.write_all(&body).await?;
        send.finish()?;
        let _ = send.stopped().await;
    }
    // Wait for the client's CONNECTION_CLOSE so that its last packets are acknowledged on the wire.
    conn.closed().await;
    Ok(())
}

/// "GET /a/b\r\n" → ROOT/a/b; only plain path components, so a request cannot leave ROOT.
fn request_path(request: &[u8], root: &Path) -> anyhow::Result<PathBuf> {
    let line = std::str::from_utf8(request)?.trim_end();
    let path = line.strip_prefix("GET /").context("not an hq-interop GET request")?;
    let relative = Path::new(path);
    if !relative.components().all(|part| matches!(part, Component::Normal(_))) {
        bail!("bad request path {path:?}");
    }
    Ok(root.join(relative))
}
