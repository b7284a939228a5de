//! The option areas of `tests/test_tcp_segments.py`'s hand-made cases (malformed or unusual ones the recorded runs
//! do not contain), with the Python twin's answers; the recorded runs are compared there, through the lane.

use super::*;

/// One case: the option bytes, the header's option length, and the Python twin's split (or None: refused).
type OptionCase<'a> = (&'a [u8], usize, Option<([usize; 3], usize)>);

#[test]
fn option_areas_split_as_the_python_twin() {
    let mut ts = vec![1, 1, 8, 10];
    ts.extend([0; 8]);
    let mut ts_eol = vec![8, 10];
    ts_eol.extend([0; 10]);
    let mut sack = vec![1, 1, 5, 18];
    sack.extend([0; 16]);
    let cases: [OptionCase; 7] = [
        (&ts, 12, Some(([12, 0, 0], 0))),
        (&ts_eol, 12, Some(([12, 0, 0], 0))),
        (&sack, 20, Some(([0, 20, 0], 2))),
        (&[2, 4, 5, 180, 1, 3, 3, 7], 8, Some(([0, 0, 8], 0))),
        (&ts[..8], 12, None),
        (&[8, 1, 0, 0], 4, None),
        (&[8, 12, 0, 0], 4, None),
    ];
    for (options, length, expected) in cases {
        assert_eq!(split_options(options, length), expected, "{options:?}");
    }
}

#[test]
fn a_segment_whose_header_does_not_fit_is_left_to_the_python_reader() {
    let mut header = vec![0x1f, 0x90, 0x11, 0x5c, 0, 0, 0, 1, 0, 0, 0, 2, 5 << 4, 0x10, 0x01, 0x00, 0, 0, 0, 0];
    let fields = tcp_fields(&header, 0, 20, 40).expect("a plain 20-byte header");
    assert_eq!((fields.src_port, fields.dst_port, fields.seq, fields.ack, fields.flags), (8080, 4444, 1, 2, 0x10));
    assert_eq!((fields.header_bytes, fields.window), (20, 256));
    assert!(tcp_fields(&header[..19], 0, 20, 40).is_none()); // cut by the capture
    assert!(tcp_fields(&header, 0, 20, 39).is_none()); // the data offset beyond the IP length
    header[12] = 4 << 4;
    assert!(tcp_fields(&header, 0, 20, 40).is_none()); // a data offset below 20 bytes
}
