//! The frame walker (`quicack.pcap.frames.walk_frames`): a decrypted QUIC payload to frame rows, column by
//! column. Every byte of the payload ends in exactly one row: consecutive PADDING bytes form one `padding` row,
//! and an unknown or malformed frame becomes one `unknown` row holding the rest of the payload.

use pyo3::prelude::*;

use crate::arrow::Column;
pub use crate::frame_types::FRAME_NAMES;
use crate::frame_types::{wire_frame_code, F_ACK, F_ACK_FREQUENCY, F_CRYPTO, F_DATAGRAM, F_PADDING, F_STREAM, F_UNKNOWN};



/// A cursor over a payload that fails (like aioquic's Buffer) when a read runs past the end.
struct Cursor<'a> {
    data: &'a [u8],
    position: usize,
}

impl<'a> Cursor<'a> {
    fn varint(&mut self) -> Option<u64> {
        let first = *self.data.get(self.position)?;
        let length = 1usize << (first >> 6);
        if self.position + length > self.data.len() {
            return None;
        }
        let mut value = u64::from(first & 0x3F);
        for index in 1..length {
            value = (value << 8) | u64::from(self.data[self.position + index]);
        }
        self.position += length;
        Some(value)
    }

    fn bytes(&mut self, length: u64) -> Option<&'a [u8]> {
        let end = self.position.checked_add(usize::try_from(length).ok()?)?;
        if end > self.data.len() {
            return None;
        }
        let slice = &self.data[self.position..end];
        self.position = end;
        Some(slice)
    }
}

pub struct Walk {
    pub count: i64,
    pub ack_eliciting: bool,
    pub crypto: Vec<(usize, u64, Vec<u8>)>,
    pub new_cids: Vec<Vec<u8>>,
    pub unknown: Option<String>,
    pub has_ack: bool,
}

row_columns!(
    /// The frame rows' columns of one value per row (`quicack.pcap.frames.FrameColumns`' lists); the packet's
    /// columns are spread over its frames at batch time, `ack_delay_raw` is scaled by the sender's exponent then.
    pub struct FrameColumns, row FrameValues, table frames {
        frame_index: i64,
        frame_type: u8 [FRAME_NAMES],
        frame_bytes: i64,
        #[reader] ack_delay_raw: Option<u64>,
        largest_acked: Option<u64>,
        first_ack_range: Option<u64>,
        stream_id: Option<u64>,
        offset: Option<u64>,
        length: Option<u64>,
        fin: Option<bool>,
    }
);

#[derive(Default)]
pub struct FrameRows {
    pub columns: FrameColumns,
    // ACK ranges as (low, high) pairs: row i has ack_range_pairs[ack_range_ends[i-1]..ack_range_ends[i]], null
    // unless ack_range_valid[i] (wide integers: a corrupt ACK's ranges can run below zero and past i64)
    pub ack_range_ends: Vec<usize>,
    pub ack_range_valid: Vec<bool>,
    pub ack_range_pairs: Vec<(i128, i128)>,
    pub tls_messages: Vec<Option<Py<PyAny>>>,
    pub ecn: Vec<(usize, [u64; 3])>,
    pub ack_frequency: Vec<(usize, [u64; 4])>,
}

impl FrameRows {
    pub fn len(&self) -> usize {
        self.columns.frame_index.len()
    }

    /// One frame row; `has_ranges`: an ACK, whose ranges were pushed onto ack_range_pairs just before.
    fn add(&mut self, index: i64, name: u8, size: usize, values: FrameValues, has_ranges: bool) {
        self.columns.push(FrameValues { frame_index: index, frame_type: name, frame_bytes: size as i64, ..values });
        self.ack_range_ends.push(if has_ranges { self.ack_range_pairs.len() } else { self.ranges_end() });
        self.ack_range_valid.push(has_ranges);
        self.tls_messages.push(None);
    }

    /// The ACK ranges as the contract's list of {low, high} structs, or, when a corrupt ACK's values do not fit
    /// 64 bits, as the JSON text `[[low, high], ...]` the pure-Python engine writes (the decoder parses it).
    pub fn ack_ranges_column(&self, as_lists: bool) -> Column {
        let pairs = &self.ack_range_pairs[..self.ranges_end()];
        let fits = |value: i128| i64::try_from(value).is_ok();
        if as_lists && pairs.iter().all(|(low, high)| fits(*low) && fits(*high)) {
            return Column::Ranges(
                self.ack_range_ends.iter().map(|end| *end as i32).collect(),
                self.ack_range_valid.clone(),
                pairs.iter().map(|(low, high)| (*low as i64, *high as i64)).collect(),
            );
        }
        let mut start = 0;
        let mut texts = Vec::with_capacity(self.len());
        for (end, valid) in self.ack_range_ends.iter().zip(&self.ack_range_valid) {
            texts.push(valid.then(|| {
                let items: Vec<String> = pairs[start..*end].iter().map(|(low, high)| format!("[{low},{high}]")).collect();
                format!("[{}]", items.join(","))
            }));
            start = *end;
        }
        Column::Text(texts)
    }

    /// Where the ranges of the last row end (those pushed after it belong to no row yet).
    fn ranges_end(&self) -> usize {
        self.ack_range_ends.last().copied().unwrap_or(0)
    }

    pub fn truncate(&mut self, length: usize) {
        self.columns.truncate(length);
        truncate_columns!(length; self.ack_range_ends, self.ack_range_valid, self.tls_messages);
        self.ack_range_pairs.truncate(self.ranges_end());
        self.ecn.retain(|(row, _)| *row < length);
        self.ack_frequency.retain(|(row, _)| *row < length);
    }

    /// One frame; Err(()) when it runs past the end, Ok(false) for an unknown type.
    fn walk_one(
        &mut self,
        cursor: &mut Cursor,
        index: i64,
        position: usize,
        walk: &mut Walk,
    ) -> Result<bool, ()> {
        let payload = cursor.data;
        let end = payload.len();
        let frame_type = cursor.varint().ok_or(())?;
        let mut values = FrameValues::default();
        match frame_type {
            0x00 => {
                let stop = payload[position..].iter().position(|byte| *byte != 0).map_or(end, |at| position + at);
                // A PADDING type in a longer varint encoding would not move: count its bytes (Python would loop).
                let stop = stop.max(cursor.position);
                self.add(index, F_PADDING, stop - position, values, false);
                cursor.position = stop;
                return Ok(true);
            }
            0x08..=0x0F => {
                let stream_id = cursor.varint().ok_or(())?;
                let offset = if frame_type & 0x04 != 0 { cursor.varint().ok_or(())? } else { 0 };
                let (data_end, length) = if frame_type & 0x02 != 0 {
                    let length = cursor.varint().ok_or(())?;
                    let data_end = (cursor.position as u128) + u128::from(length);
                    if data_end > end as u128 {
                        return Err(());
                    }
                    (data_end as usize, length)
                } else {
                    (end, (end - cursor.position) as u64)
                };
                cursor.position = data_end;
                values.stream_id = Some(stream_id);
                values.offset = Some(offset);
                values.length = Some(length);
                values.fin = Some(frame_type & 0x01 != 0);
                self.add(index, F_STREAM, data_end - position, values, false);
                walk.ack_eliciting = true;
            }
            0x02 | 0x03 => {
                let largest = cursor.varint().ok_or(())?;
                let delay = cursor.varint().ok_or(())?;
                let range_count = cursor.varint().ok_or(())?;
                let first_range = cursor.varint().ok_or(())?;
                let mut high = i128::from(largest);
                let mut low = high - i128::from(first_range);
                let ranges_start = self.ranges_end(); // drops the ranges of an ACK that ran past the end
                self.ack_range_pairs.truncate(ranges_start);
                self.ack_range_pairs.push((low, high));
                for _ in 0..range_count {
                    let gap = cursor.varint().ok_or(())?;
                    let range_length = cursor.varint().ok_or(())?;
                    high = low - i128::from(gap) - 2;
                    low = high - i128::from(range_length);
                    self.ack_range_pairs.push((low, high));
                }
                if frame_type == 0x03 {
                    let counts = [cursor.varint().ok_or(())?, cursor.varint().ok_or(())?, cursor.varint().ok_or(())?];
                    self.ecn.push((self.len(), counts));
                }
                values.ack_delay_raw = Some(delay);
                values.largest_acked = Some(largest);
                values.first_ack_range = Some(first_range);
                self.add(index, F_ACK, cursor.position - position, values, true);
                walk.has_ack = true;
            }
            0x06 => {
                let offset = cursor.varint().ok_or(())?;
                let length = cursor.varint().ok_or(())?;
                let data = cursor.bytes(length).ok_or(())?;
                walk.crypto.push((self.len(), offset, data.to_vec()));
                values.offset = Some(offset);
                values.length = Some(length);
                self.add(index, F_CRYPTO, cursor.position - position, values, false);
                walk.ack_eliciting = true;
            }
            0x01 | 0x1E | 0x1F | 0xAC => {
                self.add(index, wire_frame_code(frame_type).expect("known"), cursor.position - position, values, false);
                walk.ack_eliciting = true;
            }
            0xAF => {
                let fields = [
                    cursor.varint().ok_or(())?,
                    cursor.varint().ok_or(())?,
                    cursor.varint().ok_or(())?,
                    cursor.varint().ok_or(())?,
                ];
                self.ack_frequency.push((self.len(), fields));
                self.add(index, F_ACK_FREQUENCY, cursor.position - position, values, false);
                walk.ack_eliciting = true;
            }
            0x30 | 0x31 => {
                let length = if frame_type == 0x31 {
                    let length = cursor.varint().ok_or(())?;
                    if (cursor.position as u128) + u128::from(length) > end as u128 {
                        return Err(());
                    }
                    length
                } else {
                    (end - cursor.position) as u64
                };
                cursor.position += length as usize;
                values.length = Some(length);
                self.add(index, F_DATAGRAM, cursor.position - position, values, false);
                walk.ack_eliciting = true;
            }
            _ => {
                let Some(name) = wire_frame_code(frame_type) else {
                    return Ok(false);
                };
                let mut stream_id = None;
                match frame_type {
                    0x04 => {
                        stream_id = Some(cursor.varint().ok_or(())?);
                        cursor.varint().ok_or(())?;
                        cursor.varint().ok_or(())?;
                    }
                    0x05 | 0x11 | 0x15 => {
                        stream_id = Some(cursor.varint().ok_or(())?);
                        cursor.varint().ok_or(())?;
                    }
                    0x07 => {
                        let length = cursor.varint().ok_or(())?;
                        cursor.bytes(length).ok_or(())?;
                    }
                    0x10 | 0x12 | 0x13 | 0x14 | 0x16 | 0x17 | 0x19 => {
                        cursor.varint().ok_or(())?;
                    }
                    0x18 => {
                        cursor.varint().ok_or(())?;
                        cursor.varint().ok_or(())?;
                        let cid_length = cursor.bytes(1).ok_or(())?[0];
                        walk.new_cids.push(cursor.bytes(u64::from(cid_length)).ok_or(())?.to_vec());
                        cursor.bytes(16).ok_or(())?;
                    }
                    0x1A | 0x1B => {
                        cursor.bytes(8).ok_or(())?;
                    }
                    0x1C => {
                        cursor.varint().ok_or(())?;
                        cursor.varint().ok_or(())?;
                        let length = cursor.varint().ok_or(())?;
                        cursor.bytes(length).ok_or(())?;
                    }
                    _ => {
                        // 0x1D: CONNECTION_CLOSE (application): error, reason
                        cursor.varint().ok_or(())?;
                        let length = cursor.varint().ok_or(())?;
                        cursor.bytes(length).ok_or(())?;
                    }
                }
                values.stream_id = stream_id;
                self.add(index, name, cursor.position - position, values, false);
                if !matches!(frame_type, 0x00 | 0x02 | 0x03 | 0x1C | 0x1D) {
                    walk.ack_eliciting = true;
                }
            }
        }
        Ok(true)
    }

    /// One row per frame of `payload` (as frames.walk_frames); never fails.
    pub fn walk(&mut self, payload: &[u8]) -> Walk {
        let mut walk = Walk {
            count: 0,
            ack_eliciting: false,
            crypto: Vec::new(),
            new_cids: Vec::new(),
            unknown: None,
            has_ack: false,
        };
        let mut cursor = Cursor { data: payload, position: 0 };
        let end = payload.len();
        let mut index: i64 = 0;
        let mut position = 0;
        while position < end {
            match self.walk_one(&mut cursor, index, position, &mut walk) {
                Ok(true) => {}
                Ok(false) => {
                    walk.unknown = Some(format!("unknown frame type 0x{:x}", frame_type_at(payload, position)));
                    self.add(index, F_UNKNOWN, end - position, FrameValues::default(), false);
                    index += 1;
                    break;
                }
                Err(()) => {
                    walk.unknown = Some("frame runs past the end of the packet (malformed)".to_string());
                    self.add(index, F_UNKNOWN, end - position, FrameValues::default(), false);
                    index += 1;
                    break;
                }
            }
            index += 1;
            position = cursor.position;
        }
        walk.count = index;
        walk
    }
}

fn frame_type_at(payload: &[u8], position: usize) -> u64 {
    let mut cursor = Cursor { data: payload, position };
    cursor.varint().unwrap_or(0)
}


#[cfg(test)]
#[path = "../tests/frames.rs"]
mod tests;
