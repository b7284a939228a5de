//! Downloads one URL over QUIC with Cloudflare's quiche (HTTP/3 via quiche::h3, or hq-interop),
//! writing a TLS keylog and a qlog (quiche's `qlog` feature, JSON-SEQ) into a directory.
//! A blocking UDP socket drives the connection: one connection, no need for an event loop.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

const ALPN_HQ: &[u8] = b"hq-interop";
const ALPN_H3: &[u8] = b"h3";
const MAX_DATAGRAM_SIZE: usize = 1350;
const USAGE: &str = "usage: quiche-client [--alpn h3|hq] [--keylog FILE] [--qlog-dir DIR] \
                     [--download-dir DIR] [--timeout SECONDS] [--key-share x25519] URL | --version";

struct Options {
    url: url::Url,
    app_protocol: String,
    keylog: Option<PathBuf>,
    qlog_dir: Option<PathBuf>,
    download_dir: PathBuf,
    timeout: Duration,
    // Offer X25519 alone: BoringSSL's default also offers X25519MLKEM768, which splits the ClientHello over two
    // Initial datagrams.
    x25519_only: bool,
}

fn parse_args() -> anyhow::Result<Option<Options>> {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let mut app_protocol = "h3".to_string();
    let mut keylog = None;
    let mut qlog_dir = None;
    let mut download_dir = PathBuf::from(".");
    let mut timeout = Duration::from_secs(30);
    let mut x25519_only = false;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow!("{arg} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--version" => return Ok(None),
            "--alpn" => app_protocol = value()?,
            "--keylog" => keylog = Some(PathBuf::from(value()?)),
            "--qlog-dir" => qlog_dir = Some(PathBuf::from(value()?)),
            "--download-dir" => download_dir = PathBuf::from(value()?),
            "--timeout" => timeout = Duration::from_secs_f64(value()?.parse()?),
            "--key-share" => match value()?.as_str() {
                "x25519" => x25519_only = true,
                other => bail!("unknown --key-share {other} (x25519)\n{USAGE}"),
            },
            _ if arg.starts_with("--") => bail!("unknown option {arg}\n{USAGE}"),
            _ => url = Some(url::Url::parse(&arg)?),
        }
    }
    let url = url.ok_or_else(|| anyhow!("{USAGE}"))?;
    Ok(Some(Options { url, app_protocol, keylog, qlog_dir, download_dir, timeout, x25519_only }))
}

/// Whether a datagram arrived within `wait`. ppoll(2) sleeps on a high-resolution timer; the socket's SO_RCVTIMEO,
/// used before, rounds up to the kernel's jiffies (4 ms at HZ=250), and quiche's first PTO of 999 ms fired 5–30 ms
/// late through it.
fn readable_within(socket: &UdpSocket, wait: Duration) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut fds = libc::pollfd { fd: socket.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    let timeout = libc::timespec { tv_sec: wait.as_secs() as libc::time_t, tv_nsec: wait.subsec_nanos() as libc::c_long };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let ready = unsafe { libc::ppoll(&mut fds, 1, &timeout, std::ptr::null()) };
    if ready < 0 {
        let err = std::io::Error::last_os_error();
        return if err.kind() == std::io::ErrorKind::Interrupted { Ok(false) } else { Err(err) };
    }
    Ok(ready > 0)
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
        eprintln!("download failed: {err:#}");
        std::process::exit(1);
    }
}

/// What the application layer does with the established connection.
enum App {
    Hq { stream_id: Option<u64> },
    H3 { h3: Option<quiche::h3::Connection>, stream_id: Option<u64>, status_ok: bool },
}

fn run(options: &Options) -> anyhow::Result<()> {
    let deadline = Instant::now() + options.timeout;
    let alpn = match options.app_protocol.as_str() {
        "hq" => ALPN_HQ,
        "h3" => ALPN_H3,
        other => bail!("unknown application protocol {other:?} (want h3 or hq)"),
    };
    let host = options.url.host_str().context("URL without host")?.to_string();
    let port = options.url.port().unwrap_or(443);
    let peer: SocketAddr = (host.as_str(), port).to_socket_addrs()?.next().context("host did not resolve")?;
    let bind: SocketAddr = if peer.is_ipv4() { "0.0.0.0:0".parse()? } else { "[::]:0".parse()? };
    let socket = UdpSocket::bind(bind)?;
    socket.set_nonblocking(true)?;
    let local = socket.local_addr()?;

    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION)?;
    // The testbed servers use self-signed certificates.
    config.verify_peer(false);
    config.set_application_protos(&[alpn])?;
    config.set_max_idle_timeout(options.timeout.as_millis() as u64);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_initial_max_data(16 * 1024 * 1024);
    config.set_initial_max_stream_data_bidi_local(16 * 1024 * 1024);
    config.set_initial_max_stream_data_bidi_remote(1024 * 1024);
    config.set_initial_max_stream_data_uni(1024 * 1024);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(100);
    config.set_disable_active_migration(true);
    if options.x25519_only {
        config.set_curves_list("X25519")?;
    }
    if options.keylog.is_some() {
        config.log_keys();
    }

    let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
    File::open("/dev/urandom")?.read_exact(&mut scid)?;
    let scid = quiche::ConnectionId::from_ref(&scid);
    // An IP address is no server name: send no SNI then, like the other clients.
    let server_name = if host.parse::<std::net::IpAddr>().is_ok() { None } else { Some(host.as_str()) };
    let mut conn = quiche::connect(server_name, &scid, local, peer, &mut config)?;
    if let Some(keylog) = &options.keylog {
        conn.set_keylog(Box::new(BufWriter::new(File::create(keylog)?)));
    }
    if let Some(qlog_dir) = &options.qlog_dir {
        std::fs::create_dir_all(qlog_dir)?;
        // Named by the original destination connection ID, like quic-go's and aioquic's qlogs,
        // so that client and server files of one connection share the ID.
        let path = qlog_dir.join(format!("{}_client.sqlog", hex(conn.destination_id().as_ref())));
        conn.set_qlog_with_level(
            Box::new(BufWriter::new(File::create(path)?)),
            format!("{} client", env!("QUICHE_VERSION")),
            options.url.to_string(),
            quiche::QlogLevel::Extra,
        );
    }

    let file_name = Path::new(options.url.path()).file_name().context("URL path has no file name")?;
    let out_path = options.download_dir.join(file_name);
    // The body goes to a .part file that becomes out_path only when complete.
    let part_path = {
        let mut name = out_path.clone().into_os_string();
        name.push(".part");
        PathBuf::from(name)
    };
    let mut out = BufWriter::new(File::create(&part_path)?);
    let mut app = if alpn == ALPN_HQ { App::Hq { stream_id: None } } else { App::H3 { h3: None, stream_id: None, status_ok: false } };
    let mut finished = false;
    let mut received = 0usize;
    let mut buf = vec![0u8; 65535];
    let mut send_buf = vec![0u8; MAX_DATAGRAM_SIZE];

    let result = (|| -> anyhow::Result<()> {
        loop {
            flush(&mut conn, &socket, &mut send_buf)?;
            if conn.is_closed() {
                break;
            }
            if finished && !conn.is_draining() {
                conn.close(true, 0x0, b"done").ok();
                continue;
            }
            if Instant::now() >= deadline {
                bail!("timed out after {:?}", options.timeout);
            }
            let wait = conn.timeout().unwrap_or(Duration::from_secs(1)).min(deadline - Instant::now());
            if readable_within(&socket, wait)? {
                match socket.recv_from(&mut buf) {
                    Ok((len, from)) => {
                        conn.recv(&mut buf[..len], quiche::RecvInfo { from, to: local })?;
                    }
                    Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(err) => return Err(err.into()),
                }
            } else {
                conn.on_timeout();
            }
            if !conn.is_established() || finished {
                continue;
            }
            let path = options.url.path();
            match &mut app {
                App::Hq { stream_id } => {
                    if stream_id.is_none() {
                        conn.stream_send(0, format!("GET {path}\r\n").as_bytes(), true)?;
                        *stream_id = Some(0);
                    }
                    while let Ok((len, fin)) = conn.stream_recv(0, &mut buf) {
                        out.write_all(&buf[..len])?;
                        received += len;
                        if fin {
                            finished = true;
                        }
                    }
                }
                App::H3 { h3, stream_id, status_ok } => {
                    if h3.is_none() {
                        let h3_config = quiche::h3::Config::new()?;
                        *h3 = Some(quiche::h3::Connection::with_transport(&mut conn, &h3_config)?);
                    }
                    let h3 = h3.as_mut().expect("created above");
                    if stream_id.is_none() {
                        let authority = options.url[url::Position::BeforeHost..url::Position::AfterPort].to_string();
                        let request = [
                            quiche::h3::Header::new(b":method", b"GET"),
                            quiche::h3::Header::new(b":scheme", b"https"),
                            quiche::h3::Header::new(b":authority", authority.as_bytes()),
                            quiche::h3::Header::new(b":path", path.as_bytes()),
                            quiche::h3::Header::new(b"user-agent", env!("QUICHE_VERSION").as_bytes()),
                        ];
                        *stream_id = Some(h3.send_request(&mut conn, &request, true)?);
                    }
                    loop {
                        match h3.poll(&mut conn) {
                            Ok((id, quiche::h3::Event::Headers { list, .. })) if Some(id) == *stream_id => {
                                use quiche::h3::NameValue;
                                let status = list.iter().find(|h| h.name() == b":status").map(|h| h.value().to_vec());
                                if status.as_deref() != Some(b"200") {
                                    bail!("HTTP status {:?}", status.map(|s| String::from_utf8_lossy(&s).into_owned()));
                                }
                                *status_ok = true;
                            }
                            Ok((id, quiche::h3::Event::Data)) if Some(id) == *stream_id => {
                                while let Ok(len) = h3.recv_body(&mut conn, id, &mut buf) {
                                    out.write_all(&buf[..len])?;
                                    received += len;
                                }
                            }
                            Ok((id, quiche::h3::Event::Finished)) if Some(id) == *stream_id => {
                                if !*status_ok {
                                    bail!("response without headers");
                                }
                                finished = true;
                            }
                            Ok((id, quiche::h3::Event::Reset(code))) if Some(id) == *stream_id => {
                                bail!("stream reset, error code {code}");
                            }
                            Ok(_) => {}
                            Err(quiche::h3::Error::Done) => break,
                            Err(err) => return Err(err.into()),
                        }
                    }
                }
            }
        }
        if !finished {
            bail!("connection closed before the body was complete (peer error {:?})", conn.peer_error());
        }
        if received == 0 {
            bail!("empty response");
        }
        Ok(())
    })();
    // Dropping the connection flushes its qlog and keylog writers.
    drop(conn);
    out.flush()?;
    drop(out);
    match result {
        Ok(()) => std::fs::rename(&part_path, &out_path).map_err(Into::into),
        Err(err) => {
            let _ = std::fs::remove_file(&part_path);
            Err(err)
        }
    }
}

fn flush(conn: &mut quiche::Connection, socket: &UdpSocket, send_buf: &mut [u8]) -> anyhow::Result<()> {
    loop {
        match conn.send(send_buf) {
            Ok((len, info)) => {
                socket.send_to(&send_buf[..len], info.to)?;
            }
            Err(quiche::Error::Done) => return Ok(()),
            Err(err) => return Err(err.into()),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
