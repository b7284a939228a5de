//! The row buffers of the qlog lane: rows moved in order between connections, Python lists and Arrow columns.

use pyo3::types::PyList;
use pyo3::Python;

use super::*;

fn packets(ts: &[f64]) -> PacketRows {
    let mut rows = PacketRows::default();
    for &t in ts {
        rows.event.push(0);
        rows.t.push(t);
        rows.packet_type.push(3);
        rows.pn_space.push(Some(2));
        rows.packet_number.push(Some(t as i64));
        rows.packet_bytes.push(None);
        rows.aead_tag_bytes.push(Some(16));
        rows.ack_eliciting.push(Some(true));
        rows.frames_logged.push(true);
    }
    rows
}

#[test]
fn rows_are_appended_and_prepended_column_by_column() {
    let mut rows = packets(&[3.0, 4.0]);
    rows.append(packets(&[5.0]));
    rows.prepend(packets(&[1.0, 2.0]));
    assert_eq!(rows.t, [1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(rows.packet_number, [Some(1), Some(2), Some(3), Some(4), Some(5)]);
    assert_eq!(rows.frames_logged.len(), 5);
}

#[test]
fn arrow_columns_hold_the_connections_rows_in_the_order_given() {
    let (mut a, mut b) = (Rows::default(), Rows::default());
    a.packets = packets(&[1.0, 2.0]);
    b.packets = packets(&[7.0]);
    let parts = vec![b.take_table(0), a.take_table(0)];
    let columns = arrow_columns(0, parts);
    let names: Vec<&str> = columns.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        ["event", "t", "packet_type", "pn_space", "packet_number", "packet_bytes", "aead_tag_bytes", "ack_eliciting", "frames_logged"]
    );
    match &columns[1].1 {
        Column::Float(t) => assert_eq!(t, &[Some(7.0), Some(1.0), Some(2.0)]),
        _ => panic!("t is a float column"),
    }
    match &columns[2].1 {
        Column::CodeViews(names, codes) => assert_eq!(names[codes[0] as usize], "1rtt"),
        _ => panic!("packet_type is text by code, handed as string views"),
    }
    assert_eq!(a.count(0) + b.count(0), 0); // taken out
}

#[test]
fn rows_go_to_python_and_come_back_only_when_every_value_has_its_columns_type() {
    pyo3::prepare_freethreaded_python();
    Python::with_gil(|py| {
        let mut rows = Rows { packets: packets(&[1.0, 2.0]), ..Rows::default() };
        let flat = rows.take_python(py, 0).unwrap();
        assert_eq!(flat.len(), 2 * WIDTHS[0]);
        assert_eq!(flat.get_item(2).unwrap().extract::<String>().unwrap(), "1rtt");
        assert_eq!(rows.count(0), 0);
        let back = Rows::from_python(0, &flat).expect("all values of their column's type");
        assert_eq!(back.packets.t, [1.0, 2.0]);
        flat.set_item(4, "7").unwrap(); // a packet number as text
        assert!(Rows::from_python(0, &flat).is_err());
        flat.set_item(4, 7.0).unwrap(); // as a float
        assert!(Rows::from_python(0, &flat).is_err());
        let short = PyList::new_bound(py, [1, 2, 3]);
        assert!(Rows::from_python(2, &short).is_err()); // not a whole row
    });
}

#[test]
fn ack_ranges_leave_as_structs_to_arrow_and_as_json_text_to_python_and_come_back() {
    let ranges = |pairs: &[(i64, i64)]| Some(AckRanges(pairs.to_vec()));
    let column = <Option<AckRanges> as Cell>::column(vec![ranges(&[(7, 7), (1, 3)]), None, ranges(&[(9, 12)])], &[]);
    match column {
        Column::Ranges(ends, valid, pairs) => {
            assert_eq!((ends, valid), (vec![2, 2, 3], vec![true, false, true]));
            assert_eq!(pairs, [(7, 7), (1, 3), (9, 12)]);
        }
        _ => panic!("ACK ranges are lists of structs"),
    }
    pyo3::prepare_freethreaded_python();
    Python::with_gil(|py| {
        let flat = PyList::empty_bound(py);
        ranges(&[(7, 7), (-1, 3)]).append_to(&flat, &[]).unwrap();
        let text = flat.get_item(0).unwrap();
        assert_eq!(text.extract::<String>().unwrap(), "[[7,7],[-1,3]]"); // as orjson writes the Python rows
        assert_eq!(<Option<AckRanges> as Cell>::from_py(&text, &[]), Ok(ranges(&[(7, 7), (-1, 3)])));
        // text that is not int64 pairs stays in Python (its rows go through polars' JSON parsing)
        for odd in ["[[1,2,3]]", "[[1]]", "[[1.5,2]]", "[[1,18446744073709551616]]", "[1,2]", "{}", "[[1,2]"] {
            let value = pyo3::types::PyString::new_bound(py, odd);
            assert_eq!(<Option<AckRanges> as Cell>::from_py(&value, &[]), Err(()), "{odd}");
        }
    });
}
