//! A minimal HTTP/3 (quiche::h3) and hq-interop server with Cloudflare's quiche, the testbed's sender for the
//! ACK-ratio study: answers GET requests with files under --root, writes a TLS keylog and a qlog (JSON-SEQ).
//!
//! The sender's congestion control is set on the command line: --cc reno|cubic (quiche's `CongestionControlAlgorithm`;
//! default cubic as quiche's) and --no-hystart (HyStart++ off; quiche enables it by default). quiche 0.30 paces only
//! with its BBR (gcongestion): with reno and cubic `SendInfo.at` is always "now"
//! (`recovery::congestion::Recovery::get_packet_send_time`), so they send each congestion window as it opens, and this
//! loop sends every packet as soon as quiche hands it over (BBR is not offered: its pacing would need the loop to wait
//! for `SendInfo.at`). `--cc reno --no-hystart` is RFC 9002's NewReno without pacing, as the quicly of the ACK-ratio
//! papers (ackfreq22 §5.5, rethink §VII: "if pacing had been used by Quicly").
//!
//! One blocking UDP socket serves every connection (the testbed opens one per server process).

use std::collections::HashMap;
use std::fs::File;
use std::io::{LineWriter, Read};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};

const ALPN_HQ: &[u8] = b"hq-interop";
const ALPN_H3: &[u8] = b"h3";
const MAX_DATAGRAM_SIZE: usize = 1350;
const USAGE: &str = "usage: quiche-server --listen ADDR:PORT --root DIR --cert PEM --key PEM [--keylog FILE] \
                     [--qlog-dir DIR] [--cc reno|cubic] [--no-hystart] | --version";

struct Options {
    listen: SocketAddr,
    root: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    keylog: Option<PathBuf>,
    qlog_dir: Option<PathBuf>,
    cc: String,
    hystart: bool,
}

fn parse_args() -> anyhow::Result<Option<Options>> {
    let mut args = std::env::args().skip(1);
    let (mut listen, mut root, mut cert, mut key) = (None, None, None, None);
    let (mut keylog, mut qlog_dir, mut cc, mut hystart) = (None, None, "cubic".to_string(), true);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--version" => return Ok(None),
            "--listen" => listen = Some(value()?.parse()?),
            "--root" => root = Some(PathBuf::from(value()?)),
            "--cert" => cert = Some(PathBuf::from(value()?)),
            "--key" => key = Some(PathBuf::from(value()?)),
            "--keylog" => keylog = Some(PathBuf::from(value()?)),
            "--qlog-dir" => qlog_dir = Some(PathBuf::from(value()?)),
            "--cc" => cc = value()?,
            "--no-hystart" => hystart = false,
            _ => bail!("unknown argument {arg}\n{USAGE}"),
        }
    }
    if cc != "reno" && cc != "cubic" {
        bail!("--cc {cc}: reno or cubic (quiche paces only BBR, which this server does not offer)\n{USAGE}");
    }
    let missing = |what: &str| anyhow!("{what} is required\n{USAGE}");
    Ok(Some(Options {
        listen: listen.ok_or_else(|| missing("--listen"))?,
        root: root.ok_or_else(|| missing("--root"))?,
        cert: cert.ok_or_else(|| missing("--cert"))?,
        key: key.ok_or_else(|| missing("--key"))?,
        keylog,
        qlog_dir,
        cc,
        hystart,
    }))
}

fn main() {
    let options = match parse_args() {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{}", env!("QUICHE_VERSION"));
            return;
        }
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(2);
        }
    };
    if let Err(err) = run(&options) {
        eprintln!("quiche-server: {err:#}");
        std::process::exit(1);
    }
}

/// A response still being written: the body and how much of it quiche has taken.
struct Pending {
    body: Vec<u8>,
    written: usize,
}

struct Client {
    conn: quiche::Connection,
    h3: Option<quiche::h3::Connection>,
    hq_requests: HashMap<u64, Vec<u8>>,
    responses: HashMap<u64, Pending>,
}

fn config(options: &Options) -> anyhow::Result<quiche::Config> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION)?;
    config.load_cert_chain_from_pem_file(options.cert.to_str().context("certificate path")?)?;
    config.load_priv_key_from_pem_file(options.key.to_str().context("key path")?)?;
    config.set_application_protos(&[ALPN_H3, ALPN_HQ])?;
    config.set_max_idle_timeout(60_000);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_initial_max_data(16 * 1024 * 1024);
    config.set_initial_max_stream_data_bidi_local(16 * 1024 * 1024);
    config.set_initial_max_stream_data_bidi_remote(1024 * 1024);
    config.set_initial_max_stream_data_uni(1024 * 1024);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(100);
    config.set_disable_active_migration(true);
    config.set_cc_algorithm_name(&options.cc).map_err(|err| anyhow!("--cc {}: {err}", options.cc))?;
    config.enable_hystart(options.hystart);
    if options.keylog.is_some() {
        config.log_keys();
    }
    Ok(config)
}

fn run(options: &Options) -> anyhow::Result<()> {
    let mut config = config(options)?;
    let h3_config = quiche::h3::Config::new()?;
    let socket = UdpSocket::bind(options.listen)?;
    let local = socket.local_addr()?;
    eprintln!("quiche-server: listening on {local} (cc {}, hystart {}, unpaced)", options.cc, options.hystart);

    let mut clients: HashMap<quiche::ConnectionId<'static>, Client> = HashMap::new();
    // A client repeats its first Initial to the destination connection ID it chose until our first packet reaches it
    // (on a 638 ms path its probe timer fires first): those Initials belong to the connection they started.
    let mut original_ids: HashMap<quiche::ConnectionId<'static>, quiche::ConnectionId<'static>> = HashMap::new();
    let mut buf = vec![0u8; 65535];
    let mut out = vec![0u8; MAX_DATAGRAM_SIZE];
    loop {
        let wait = clients.values().filter_map(|c| c.conn.timeout()).min().unwrap_or(Duration::from_secs(1));
        socket.set_read_timeout(Some(wait.max(Duration::from_micros(50))))?;
        match socket.recv_from(&mut buf) {
            Ok((len, from)) => {
                if let Some(id) =
                    receive(&mut buf[..len], from, local, &socket, &mut clients, &mut original_ids, &mut config, options)?
                {
                    let client = clients.get_mut(&id).expect("just received");
                    serve(client, &h3_config, &options.root)?;
                }
            }
            // quiche's on_timeout acts only on timers that are due, so calling it when the wait ended is safe.
            Err(err) if matches!(err.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                clients.values_mut().for_each(|client| client.conn.on_timeout());
            }
            Err(err) => return Err(err.into()),
        }
        for client in clients.values_mut() {
            // A busy socket never times out: fire the timers that fell due meanwhile (loss detection, idle).
            if client.conn.timeout() == Some(Duration::ZERO) {
                client.conn.on_timeout();
            }
            write_responses(client)?;
            flush(&mut client.conn, &socket, &mut out)?;
        }
        clients.retain(|_, client| !client.conn.is_closed());
        original_ids.retain(|_, id| clients.contains_key(id));
    }
}

/// Feed a datagram to its connection (accepting a new one on an Initial); the connection's ID, or None when the
/// datagram was answered (version negotiation) or dropped.
fn receive(
    data: &mut [u8], from: SocketAddr, local: SocketAddr, socket: &UdpSocket,
    clients: &mut HashMap<quiche::ConnectionId<'static>, Client>,
    original_ids: &mut HashMap<quiche::ConnectionId<'static>, quiche::ConnectionId<'static>>, config: &mut quiche::Config,
    options: &Options,
) -> anyhow::Result<Option<quiche::ConnectionId<'static>>> {
    let Ok(header) = quiche::Header::from_slice(data, quiche::MAX_CONN_ID_LEN) else {
        return Ok(None);
    };
    let mut dcid = header.dcid.clone().into_owned();
    if let Some(id) = original_ids.get(&dcid) {
        dcid = id.clone();
    }
    if !clients.contains_key(&dcid) {
        if header.ty != quiche::Type::Initial {
            return Ok(None);
        }
        if !quiche::version_is_supported(header.version) {
            let mut out = [0u8; MAX_DATAGRAM_SIZE];
            let len = quiche::negotiate_version(&header.scid, &header.dcid, &mut out)?;
            socket.send_to(&out[..len], from)?;
            return Ok(None);
        }
        let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
        File::open("/dev/urandom")?.read_exact(&mut scid)?;
        let scid = quiche::ConnectionId::from_vec(scid.to_vec());
        let mut conn = quiche::accept(&scid, None, local, from, config)?;
        if let Some(keylog) = &options.keylog {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(keylog)?;
            // Line-buffered, as the qlog: the testbed stops the server with a signal, so nothing may wait in a buffer.
            conn.set_keylog(Box::new(LineWriter::new(file)));
        }
        if let Some(qlog_dir) = &options.qlog_dir {
            std::fs::create_dir_all(qlog_dir)?;
            // Named by the original destination connection ID, as the testbed's clients name theirs.
            let path = qlog_dir.join(format!("{}_server.sqlog", hex(header.dcid.as_ref())));
            conn.set_qlog_with_level(
                // One JSON-SEQ record per line: complete records on disk whenever the server is stopped.
                Box::new(LineWriter::new(File::create(path)?)),
                format!("{} server", env!("QUICHE_VERSION")),
                format!("cc {} hystart {}", options.cc, options.hystart),
                quiche::QlogLevel::Extra,
            );
        }
        let client = Client { conn, h3: None, hq_requests: HashMap::new(), responses: HashMap::new() };
        clients.insert(scid.clone(), client);
        original_ids.insert(header.dcid.clone().into_owned(), scid.clone());
        let client = clients.get_mut(&scid).expect("inserted");
        client.conn.recv(data, quiche::RecvInfo { from, to: local })?;
        return Ok(Some(scid));
    }
    let client = clients.get_mut(&dcid).expect("checked");
    match client.conn.recv(data, quiche::RecvInfo { from, to: local }) {
        Ok(_) | Err(quiche::Error::Done) => Ok(Some(dcid)),
        Err(err) => {
            eprintln!("quiche-server: recv: {err}");
            Ok(Some(dcid))
        }
    }
}

/// Read requests that arrived and queue their responses.
fn serve(client: &mut Client, h3_config: &quiche::h3::Config, root: &Path) -> anyhow::Result<()> {
    if !client.conn.is_established() && !client.conn.is_in_early_data() {
        return Ok(());
    }
    if client.conn.application_proto() == ALPN_HQ {
        let mut buf = [0u8; 4096];
        let readable: Vec<u64> = client.conn.readable().collect();
        for stream_id in readable {
            while let Ok((len, fin)) = client.conn.stream_recv(stream_id, &mut buf) {
                let request = client.hq_requests.entry(stream_id).or_default();
                request.extend_from_slice(&buf[..len]);
                if fin {
                    let line = String::from_utf8_lossy(request).into_owned();
                    let path = line.trim_end().strip_prefix("GET ").unwrap_or("").to_string();
                    let body = read_file(root, &path).unwrap_or_default();
                    client.responses.insert(stream_id, Pending { body, written: 0 });
                }
            }
        }
        return Ok(());
    }
    if client.h3.is_none() {
        client.h3 = Some(quiche::h3::Connection::with_transport(&mut client.conn, h3_config)?);
    }
    let h3 = client.h3.as_mut().expect("created above");
    loop {
        match h3.poll(&mut client.conn) {
            Ok((stream_id, quiche::h3::Event::Headers { list, .. })) => {
                use quiche::h3::NameValue;
                let path = list.iter().find(|h| h.name() == b":path").map(|h| String::from_utf8_lossy(h.value()).into_owned());
                let body = path.as_deref().and_then(|p| read_file(root, p));
                let status = if body.is_some() { "200" } else { "404" };
                let body = body.unwrap_or_default();
                let headers = [
                    quiche::h3::Header::new(b":status", status.as_bytes()),
                    quiche::h3::Header::new(b"server", env!("QUICHE_VERSION").as_bytes()),
                    quiche::h3::Header::new(b"content-length", body.len().to_string().as_bytes()),
                ];
                h3.send_response(&mut client.conn, stream_id, &headers, body.is_empty())?;
                if !body.is_empty() {
                    client.responses.insert(stream_id, Pending { body, written: 0 });
                }
            }
            Ok(_) => {}
            Err(quiche::h3::Error::Done) => break,
            Err(err) => bail!("h3: {err}"),
        }
    }
    Ok(())
}

/// Hand quiche as much of each pending body as the stream and connection flow control take.
fn write_responses(client: &mut Client) -> anyhow::Result<()> {
    let mut finished = Vec::new();
    for (&stream_id, pending) in client.responses.iter_mut() {
        let rest = &pending.body[pending.written..];
        let written = match client.h3.as_mut() {
            Some(h3) => match h3.send_body(&mut client.conn, stream_id, rest, true) {
                Ok(n) => n,
                Err(quiche::h3::Error::Done) => 0,
                Err(err) => bail!("h3 send_body: {err}"),
            },
            None => match client.conn.stream_send(stream_id, rest, true) {
                Ok(n) => n,
                Err(quiche::Error::Done) => 0,
                Err(err) => bail!("stream_send: {err}"),
            },
        };
        pending.written += written;
        if pending.written == pending.body.len() {
            finished.push(stream_id);
        }
    }
    for stream_id in finished {
        client.responses.remove(&stream_id);
    }
    Ok(())
}

/// Send what the connection has to send, every packet at once (quiche's Reno and CUBIC do not pace).
fn flush(conn: &mut quiche::Connection, socket: &UdpSocket, out: &mut [u8]) -> anyhow::Result<()> {
    loop {
        match conn.send(out) {
            Ok((len, info)) => {
                socket.send_to(&out[..len], info.to)?;
            }
            Err(quiche::Error::Done) => return Ok(()),
            Err(err) => {
                eprintln!("quiche-server: send: {err}");
                conn.close(false, 0x1, b"internal error").ok();
                return Ok(());
            }
        }
    }
}

/// The file a request path names under ``root``: only plain components, so a request cannot leave it.
fn read_file(root: &Path, path: &str) -> Option<Vec<u8>> {
    let relative = Path::new(path.trim_start_matches('/'));
    if path.is_empty() || !relative.components().all(|part| matches!(part, Component::Normal(_))) {
        return None;
    }
    std::fs::read(root.join(relative)).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
