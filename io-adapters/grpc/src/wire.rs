//! Admin replies that hold maps, encoded as production encodes them: every map entry carries
//! its value, even an empty message. prost leaves out a value equal to the default message
//! (valid proto3), so a family without a GC rule went out as a key alone, which the Node
//! client (protobufjs) rejects with "Response message parsing error". The generated services
//! answer these types (`build.rs` maps them), so no reply can skip this encoding.

use std::collections::HashMap;

use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use prost::Message;
use prost::bytes::{Buf, BufMut};
use prost::encoding::{
    DecodeContext, WireType, encode_key, encode_varint, encoded_len_varint, key_len, message,
    string,
};

/// A `Table` reply (CreateTable, GetTable, ModifyColumnFamilies).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableReply(pub admin::Table);

/// A `ListTablesResponse` reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListTablesReply(pub admin::ListTablesResponse);

/// `Table.cluster_states` and `Table.column_families`.
const CLUSTER_STATES_TAG: u32 = 2;
const COLUMN_FAMILIES_TAG: u32 = 3;
/// `ListTablesResponse.tables` and `.next_page_token`.
const TABLES_TAG: u32 = 1;
const NEXT_PAGE_TOKEN_TAG: u32 = 2;

/// The length of one entry's body: key (field 1) and value (field 2), both always present.
fn entry_body_len<V: Message>(key: &String, value: &V) -> usize {
    string::encoded_len(1, key) + message::encoded_len(2, value)
}

fn entries_len<V: Message>(tag: u32, map: &HashMap<String, V>) -> usize {
    map.iter()
        .map(|(key, value)| {
            let body = entry_body_len(key, value);
            key_len(tag) + encoded_len_varint(body as u64) + body
        })
        .sum()
}

/// Writes the entries in key order, so a reply's bytes do not depend on hash order.
fn encode_entries<V: Message>(tag: u32, map: &HashMap<String, V>, buf: &mut impl BufMut) {
    let mut entries: Vec<(&String, &V)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in entries {
        encode_key(tag, WireType::LengthDelimited, buf);
        encode_varint(entry_body_len(key, value) as u64, buf);
        string::encode(1, key, buf);
        message::encode(2, value, buf);
    }
}

/// The table without its maps, which prost encodes as usual (field order on the wire is free).
fn without_maps(table: &admin::Table) -> admin::Table {
    admin::Table {
        cluster_states: HashMap::new(),
        column_families: HashMap::new(),
        ..table.clone()
    }
}

fn table_len(table: &admin::Table) -> usize {
    without_maps(table).encoded_len()
        + entries_len(CLUSTER_STATES_TAG, &table.cluster_states)
        + entries_len(COLUMN_FAMILIES_TAG, &table.column_families)
}

fn encode_table(table: &admin::Table, buf: &mut impl BufMut) {
    without_maps(table).encode_raw(buf);
    encode_entries(CLUSTER_STATES_TAG, &table.cluster_states, buf);
    encode_entries(COLUMN_FAMILIES_TAG, &table.column_families, buf);
}

impl Message for TableReply {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encode_table(&self.0, buf)
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        self.0.merge_field(tag, wire_type, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        table_len(&self.0)
    }

    fn clear(&mut self) {
        self.0.clear()
    }
}

impl Message for ListTablesReply {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        for table in &self.0.tables {
            encode_key(TABLES_TAG, WireType::LengthDelimited, buf);
            encode_varint(table_len(table) as u64, buf);
            encode_table(table, buf);
        }
        if !self.0.next_page_token.is_empty() {
            string::encode(NEXT_PAGE_TOKEN_TAG, &self.0.next_page_token, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        self.0.merge_field(tag, wire_type, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        let tables: usize = self
            .0
            .tables
            .iter()
            .map(|table| {
                let len = table_len(table);
                key_len(TABLES_TAG) + encoded_len_varint(len as u64) + len
            })
            .sum();
        let token = if self.0.next_page_token.is_empty() {
            0
        } else {
            string::encoded_len(NEXT_PAGE_TOKEN_TAG, &self.0.next_page_token)
        };
        tables + token
    }

    fn clear(&mut self) {
        self.0.clear()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> admin::Table {
        let mut table = admin::Table {
            name: "projects/p/instances/i/tables/t".into(),
            granularity: admin::table::TimestampGranularity::Millis as i32,
            ..Default::default()
        };
        table
            .column_families
            .insert("plain".into(), admin::ColumnFamily::default());
        table.column_families.insert(
            "kept".into(),
            admin::ColumnFamily {
                gc_rule: Some(admin::GcRule {
                    rule: Some(admin::gc_rule::Rule::MaxNumVersions(2)),
                }),
                ..Default::default()
            },
        );
        table
    }

    #[test]
    fn an_empty_family_is_sent_as_an_empty_value() {
        let bytes = TableReply(table()).encode_to_vec();
        // The entry of "plain" as production sends it: tag 3, length 9, key "plain", value {}.
        let plain: &[u8] = &[0x1a, 9, 0x0a, 5, b'p', b'l', b'a', b'i', b'n', 0x12, 0];
        assert!(bytes.windows(plain.len()).any(|w| w == plain), "{bytes:?}");
        assert_eq!(bytes.len(), TableReply(table()).encoded_len());
        // And it decodes back to the same table.
        assert_eq!(admin::Table::decode(bytes.as_slice()).unwrap(), table());
    }

    #[test]
    fn a_listing_encodes_each_table_the_same_way() {
        let reply = ListTablesReply(admin::ListTablesResponse {
            tables: vec![table(), table()],
            next_page_token: "next".into(),
        });
        let bytes = reply.encode_to_vec();
        assert_eq!(bytes.len(), reply.encoded_len());
        assert_eq!(
            admin::ListTablesResponse::decode(bytes.as_slice()).unwrap(),
            reply.0
        );
        let single = TableReply(table()).encode_to_vec();
        assert!(bytes.windows(single.len()).any(|w| w == single));
    }
}
