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

fn attrs(run_id: &str, vantage: Option<&str>, origin: f64, ref_abs_ns: Option<i64>) -> Attrs {
    Attrs { run_id: run_id.into(), vantage: vantage.map(str::to_string), origin, ref_abs_ns }
}

/// The columns of a batch table as Arrow arrays, by name.
fn arrays(columns: Vec<(String, Column)>) -> std::collections::HashMap<String, arrow_array::ArrayRef> {
    columns.into_iter().map(|(name, column)| (name, crate::arrow::column_array(column))).collect()
}

#[test]
fn a_batch_gets_the_columns_the_python_assembly_derives_per_connection() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::Array;
    // a client (sent, received) and a server (received) and a connection of no known side (sent)
    let mut parts = Vec::new();
    for (events, ts) in [(vec![0u8, 1], vec![10.5, 11.0]), (vec![1], vec![2.0000005]), (vec![0], vec![3.0])] {
        let mut rows = packets(&ts);
        rows.event = events;
        parts.push(Rows { packets: rows, ..Rows::default() });
    }
    let conns = [
        attrs("a_run_id_longer_than_twelve", Some("client"), 10.0, Some(1_000)),
        attrs("b", Some("server"), 0.0, Some(i64::MAX)),
        attrs("c", None, 1.0, None),
    ];
    let table = arrays(batch_columns(0, parts, &conns));
    assert!(!table.contains_key("t"), "the trace time leaves by time_ms");
    let text = |name: &str| -> Vec<Option<String>> {
        table[name].as_string_view().iter().map(|v| v.map(str::to_string)).collect()
    };
    let some = |s: &str| Some(s.to_string());
    assert_eq!(text("run_id"), [some("a_run_id_longer_than_twelve"), some("a_run_id_longer_than_twelve"), some("b"), some("c")]);
    assert_eq!(text("vantage"), [some("client"), some("client"), some("server"), None]);
    assert_eq!(text("source"), vec![some("qlog"); 4]);
    // client sent and server received: c2s; client received: s2c; no side: null
    assert_eq!(text("direction"), [some("c2s"), some("s2c"), some("c2s"), None]);
    let time_ms: Vec<f64> = table["time_ms"].as_primitive::<Float64Type>().values().to_vec();
    assert_eq!(time_ms, [0.5, 1.0, 2.0000005, 2.0]);
    // round(t * 1e6) half to even (2.0000005 ms * 1e6 = 2000000.4999999998: 2000000), + the reference wrapping as
    // polars adds int64s; null without a reference
    let abs: Vec<Option<i64>> = table["time_abs_ns"].as_primitive::<Int64Type>().iter().collect();
    assert_eq!(abs, [Some(10_501_000), Some(11_001_000), Some(i64::MAX.wrapping_add(2_000_000)), None]);
    assert_eq!(table["decrypted"].as_boolean().true_count(), 4);
    assert_eq!(table["event"].as_string_view().value(1), "received");
    assert_eq!(table["packet_number"].len(), 4);
}

#[test]
fn half_way_times_round_to_even_nanoseconds() {
    use arrow_array::cast::AsArray;
    let mut rows = packets(&[0.0000005, 0.0000015, 0.0000025, -0.0000005]);
    rows.event = vec![0; 4];
    let table = arrays(batch_columns(0, vec![Rows { packets: rows, ..Rows::default() }], &[attrs("r", Some("client"), 0.0, Some(0))]));
    let abs: Vec<Option<i64>> =
        table["time_abs_ns"].as_primitive::<arrow_array::types::Int64Type>().iter().collect();
    // t * 1e6 in float64: 0.5, 1.5, 2.5, -0.5 (exactly or nearly): to even where exactly half way
    let expect: Vec<Option<i64>> =
        [0.0000005f64, 0.0000015, 0.0000025, -0.0000005].iter().map(|t| Some((t * 1e6).round_ties_even() as i64)).collect();
    assert_eq!(abs, expect);
}

#[test]
fn columns_built_in_one_pass_over_parts_equal_the_concatenated_ones() {
    let parts = || {
        let mut first = packets(&[1.0, 2.0]);
        first.packet_bytes[1] = Some(1200); // a value among nulls
        first.ack_eliciting[0] = None;
        vec![first, PacketRows::default(), packets(&[3.0])]
    };
    let mut joined = PacketRows::default();
    for part in parts() {
        joined.append(part);
    }
    let one_pass = PacketRows::into_arrow_of(parts());
    for ((name, a), (_, b)) in one_pass.into_iter().zip(joined.into_arrow()) {
        let (a, b) = (crate::arrow::column_array(a), crate::arrow::column_array(b));
        assert_eq!(a.to_data(), b.to_data(), "{name}");
    }
}

#[test]
fn a_batch_leaves_in_the_contracts_columns_and_order_with_nulls_where_the_lane_fills_none() {
    use arrow_array::Array;
    let frames = |n: usize| {
        let mut rows = FrameRows::default();
        for i in 0..n {
            rows.push(crate::qlog::events::FrameRow { t: i as f64, frame_index: i as i64, ..Default::default() });
        }
        Rows { frames: rows, ..Rows::default() }
    };
    for (table, contract) in [
        (0, crate::contract::packets::COLUMNS),
        (1, crate::contract::frames::COLUMNS),
        (2, crate::contract::metrics_logged::COLUMNS),
    ] {
        let parts = vec![Rows::default(), if table == 1 { frames(3) } else { Rows::default() }];
        let columns = batch_columns(table, parts, &[attrs("a", Some("client"), 0.0, None), attrs("b", None, 0.0, None)]);
        let names: Vec<&str> = columns.iter().map(|(name, _)| name.as_str()).collect();
        let expected: Vec<&str> = contract.iter().map(|c| c.name).collect();
        assert_eq!(names, expected, "table {table}");
        if table == 1 {
            let table = arrays(columns);
            // no qlog gives the datagram or a raw frame type: nulls of the contract's types, as conform adds them
            assert_eq!(table["datagram_index"].data_type(), &arrow_schema::DataType::Int64);
            assert_eq!(table["raw_frame_type"].data_type(), &arrow_schema::DataType::Utf8View);
            assert!(matches!(table["tls_messages"].data_type(), arrow_schema::DataType::List(_)));
            assert_eq!((table["datagram_index"].len(), table["datagram_index"].null_count()), (3, 3));
            assert_eq!(table["frame_index"].null_count(), 0);
        }
    }
}
