//! The protocols of `spec/mounttable.md` §10–§16, written as async code over [`IoHandle`]
//! (see `exec`). Each function names the spec section it follows.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::future::Future;
use core::pin::Pin;

use rowkit_codec::model::{
    Mutation, ReadModifyWriteRule, Row, RowFilter, RowRange, RowSet, RuleOp, Timestamp,
};
use rowkit_codec::mounttable::{
    self as codec, CounterKind, FAMILY_CHILDREN, FAMILY_COUNTER, FAMILY_META, FAMILY_SERVERS,
    MARKER_VALUE, MountFlags, NodeRow, Permissions, QUAL_COUNTER, tags,
};

use super::exec::{IoHandle, OpFuture};
use super::glob::Glob;
use super::{
    FindingKind, FsckSummary, MountEntry, MountedServer, MtCtx, MtError, MtEvent, PermsAndVersion,
    Primitive, PrimitiveOutput,
};
use crate::{CheckAndMutateRowRequest, MutateRowRequest, ReadModifyWriteRowRequest};
use crate::{ReadRowsRequest, Request, Response, StoreError};

const SECOND: i64 = 1_000_000;
const FSCK_PAGE: i64 = 1000;

type GcFuture<'a> = Pin<Box<dyn Future<Output = (bool, Result<(), MtError>)> + 'a>>;

/// Request deadline class (§17).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Half {
    /// `max(operation deadline, now + 60 s)`.
    First,
    /// The detached second half of a two-row operation: `now + 3600 s`.
    Second,
}

fn set(family: &str, qualifier: &[u8], timestamp: Timestamp, value: &[u8]) -> Mutation {
    Mutation::SetCell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp,
        value: value.to_vec(),
    }
}

fn delete_column(family: &str, qualifier: &[u8]) -> Mutation {
    Mutation::DeleteFromColumn {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        range: None,
    }
}

/// `Value(v)`: every byte outside `[0-9A-Za-z]` as `\xHH`, so the RE2 pattern is a literal.
fn literal_regex(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len());
    for &b in v {
        if b.is_ascii_alphanumeric() {
            out.push(b);
        } else {
            out.extend_from_slice(alloc::format!("\\x{b:02x}").as_bytes());
        }
    }
    out
}

fn entry_of(name: String, node: &NodeRow) -> MountEntry {
    MountEntry {
        name,
        servers: node
            .servers
            .iter()
            .map(|s| MountedServer {
                server: s.server.clone(),
                deadline_us: s.deadline_us,
            })
            .collect(),
        mt: node.mt,
        leaf: node.leaf,
    }
}

/// Operation environment: the I/O handle and the shared inputs.
pub(crate) struct Env {
    io: IoHandle,
    ctx: Rc<MtCtx>,
}

impl Env {
    pub(crate) fn new(io: IoHandle, ctx: MtCtx) -> Env {
        Env {
            io,
            ctx: Rc::new(ctx),
        }
    }

    fn now(&self) -> Timestamp {
        self.io.now()
    }

    fn request_deadline(&self, half: Half) -> Timestamp {
        let now = self.now();
        match half {
            Half::First => self
                .ctx
                .deadline
                .max(now.saturating_add_micros(60 * SECOND)),
            Half::Second => now.saturating_add_micros(3600 * SECOND),
        }
    }

    fn check_deadline(&self) -> Result<(), MtError> {
        if self.now() >= self.ctx.deadline {
            Err(MtError::Aborted)
        } else {
            Ok(())
        }
    }

    fn warn(&self, step: &'static str, error: MtError) {
        self.io.emit(MtEvent::Warning { step, error });
    }

    /// `op`'s wait after a conflict: `(next_u64 % 50)` ms, bounded by the deadline.
    async fn backoff(&self) -> Result<(), MtError> {
        let jitter = (self.io.next_u64() % 50) as i64 * 1000;
        let at = self
            .now()
            .saturating_add_micros(jitter)
            .min(self.ctx.deadline);
        self.io.sleep_until(at).await;
        self.check_deadline()
    }

    // ---- store requests -------------------------------------------------------------------

    async fn scan(
        &self,
        table: &str,
        rows: RowSet,
        filter: Option<RowFilter>,
        limit: i64,
    ) -> Result<Vec<Row>, MtError> {
        let request = ReadRowsRequest {
            table: table.into(),
            rows,
            filter,
            rows_limit: limit,
            ..ReadRowsRequest::default()
        };
        Ok(self
            .io
            .read(request, self.request_deadline(Half::First))
            .await?)
    }

    async fn unary(&self, request: Request, half: Half) -> Result<Response, MtError> {
        Ok(self.io.unary(request, self.request_deadline(half)).await?)
    }

    /// `ReadRow(nodeTable, key, LatestN(1))`.
    async fn read_row(&self, key: Vec<u8>) -> Result<Option<Row>, MtError> {
        let rows = self
            .scan(
                &self.ctx.tables.node,
                RowSet::key(key),
                Some(RowFilter::CellsPerColumnLimit(1)),
                0,
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    /// §9 `getNode`.
    async fn get_node(&self, name: &str) -> Result<Option<NodeRow>, MtError> {
        let Some(row) = self.read_row(codec::row_key(name)).await? else {
            return Ok(None);
        };
        if row.key.len() < 9 {
            return Ok(None);
        }
        codec::decode_node(&row, self.now().0)
            .map(Some)
            .map_err(|e| MtError::Internal {
                what: alloc::format!("row {}: {e}", String::from_utf8_lossy(&row.key)),
            })
    }

    async fn check_and_mutate(
        &self,
        key: Vec<u8>,
        predicate: RowFilter,
        true_mutations: Vec<Mutation>,
        false_mutations: Vec<Mutation>,
        half: Half,
    ) -> Result<bool, MtError> {
        let request = Request::CheckAndMutateRow(CheckAndMutateRowRequest {
            table: self.ctx.tables.node.clone(),
            row_key: key,
            predicate: Some(predicate),
            true_mutations,
            false_mutations,
            ..CheckAndMutateRowRequest::default()
        });
        match self.unary(request, half).await? {
            Response::CheckAndMutateRow { predicate_matched } => Ok(predicate_matched),
            other => Err(unexpected(&other)),
        }
    }

    async fn mutate_row(
        &self,
        table: &str,
        key: Vec<u8>,
        mutations: Vec<Mutation>,
        half: Half,
    ) -> Result<(), MtError> {
        let request = Request::MutateRow(MutateRowRequest {
            table: table.into(),
            row_key: key,
            mutations,
            ..MutateRowRequest::default()
        });
        match self.unary(request, half).await? {
            Response::MutateRow => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    // ---- §10 write primitives ---------------------------------------------------------------

    /// §10.1 OCC mutation.
    async fn mutate(
        &self,
        node: &NodeRow,
        mut muts: Vec<Mutation>,
        delete: bool,
    ) -> Result<(), MtError> {
        if !delete {
            let next = codec::next_version(&node.version)?;
            muts.push(set(
                FAMILY_META,
                codec::QUAL_VERSION,
                Timestamp::SERVER_TIME,
                next.as_bytes(),
            ));
        }
        let predicate = RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex(FAMILY_META.into()),
            RowFilter::ColumnQualifierRegex(codec::QUAL_VERSION.to_vec()),
            RowFilter::CellsPerColumnLimit(1),
            RowFilter::ValueRegex(literal_regex(&node.version)),
        ]);
        let matched = self
            .check_and_mutate(
                node.row_key.clone(),
                predicate,
                muts,
                Vec::new(),
                Half::First,
            )
            .await?;
        if matched {
            Ok(())
        } else {
            Err(MtError::ConcurrentAccess)
        }
    }

    /// §10.4 `incrementWithLimit`.
    async fn increment(
        &self,
        kind: CounterKind,
        creator: &str,
        delta: i64,
        limit: i64,
        half: Half,
    ) -> Result<(), MtError> {
        if delta == 0 {
            return Ok(());
        }
        let key = codec::counter_row_key(kind, creator);
        let n = self.rmw(key.clone(), delta, half).await?;
        if delta > 0 && limit > 0 && n > limit {
            if let Err(e) = self.rmw(key, -delta, half).await {
                self.warn("undo counter increment", e);
            }
            return Err(match kind {
                CounterKind::Nodes => MtError::NodeLimitExceeded { limit },
                CounterKind::Servers => MtError::ServerLimitExceeded { limit },
            });
        }
        Ok(())
    }

    async fn rmw(&self, key: Vec<u8>, delta: i64, half: Half) -> Result<i64, MtError> {
        let request = Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
            table: self.ctx.tables.counter.clone(),
            row_key: key,
            rules: vec![ReadModifyWriteRule {
                family: FAMILY_COUNTER.into(),
                qualifier: QUAL_COUNTER.to_vec(),
                op: RuleOp::IncrementAmount(delta),
            }],
            ..ReadModifyWriteRowRequest::default()
        });
        match self.unary(request, half).await? {
            Response::ReadModifyWriteRow(row) => {
                codec::decode_counter_row(&row).map_err(|e| MtError::Internal {
                    what: e.to_string(),
                })
            }
            other => Err(unexpected(&other)),
        }
    }

    /// §10.2 `createRow`.
    async fn create_row(
        &self,
        name: &str,
        perms: &Permissions,
        creator: &str,
        id: &[u8],
        limit: i64,
        half: Half,
    ) -> Result<(), MtError> {
        let json = codec::encode_permissions(perms);
        let creator = if creator.is_empty() {
            codec::SERVER_USER
        } else {
            creator
        };
        self.increment(CounterKind::Nodes, creator, 1, limit, half)
            .await?;
        let version = codec::format_version((self.io.next_u64() >> 32) as u32);
        let predicate = RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex(FAMILY_META.into()),
            RowFilter::ColumnQualifierRegex(codec::QUAL_CREATOR.to_vec()),
        ]);
        let ts = Timestamp::SERVER_TIME;
        let muts = vec![
            set(FAMILY_META, codec::QUAL_ID, ts, id),
            set(FAMILY_META, codec::QUAL_CREATOR, ts, creator.as_bytes()),
            set(FAMILY_META, codec::QUAL_PERMS, ts, &json),
            set(FAMILY_META, codec::QUAL_VERSION, ts, version.as_bytes()),
        ];
        let outcome = match self
            .check_and_mutate(codec::row_key(name), predicate, Vec::new(), muts, half)
            .await
        {
            Ok(false) => return Ok(()),
            Ok(true) => MtError::ConcurrentAccess,
            Err(e) => e,
        };
        if let Err(e) = self
            .increment(CounterKind::Nodes, creator, -1, 0, half)
            .await
        {
            self.warn("undo node counter", e);
        }
        Err(outcome)
    }

    // ---- §11 node operations ----------------------------------------------------------------

    /// §11.1 `createChild`.
    async fn create_child(
        &self,
        parent: &NodeRow,
        child: &str,
        perms: &Permissions,
        creator: &str,
        limit: i64,
    ) -> Result<NodeRow, MtError> {
        if parent.version.len() != 8 {
            return Err(codec::VersionError {
                value: parent.version_str(),
                reason: "a parent version used as a child id must be 8 bytes",
            }
            .into());
        }
        let id = parent.version.clone();
        let q = codec::child_qualifier(&id, child);
        self.mutate(
            parent,
            vec![set(
                FAMILY_CHILDREN,
                &q,
                Timestamp::SERVER_TIME,
                MARKER_VALUE,
            )],
            false,
        )
        .await?;
        let child_name = codec::join(&[&parent.name, child]);
        if let Err(e) = self
            .create_row(&child_name, perms, creator, &id, limit, Half::Second)
            .await
        {
            if let Err(w) = self
                .mutate_row(
                    &self.ctx.tables.node,
                    parent.row_key.clone(),
                    vec![delete_column(FAMILY_CHILDREN, &q)],
                    Half::First,
                )
                .await
            {
                self.warn("roll back child reference", w);
            }
            return Err(e);
        }
        let stale: Vec<Mutation> = parent
            .children
            .iter()
            .filter(|c| c.name == child)
            .map(|c| delete_column(FAMILY_CHILDREN, &codec::child_qualifier(&c.id, &c.name)))
            .collect();
        if !stale.is_empty()
            && let Err(w) = self
                .mutate_row(
                    &self.ctx.tables.node,
                    parent.row_key.clone(),
                    stale,
                    Half::First,
                )
                .await
        {
            self.warn("delete stale child references", w);
        }
        let node = self
            .get_node(&child_name)
            .await?
            .ok_or(MtError::ConcurrentAccess)?;
        self.ensure_linked(parent, child, &id, &node).await?;
        Ok(node)
    }

    /// rowkit fix (not in btmtd): after creating a child row, make sure the parent still
    /// references it. Between our reference and our row, another caller may have taken our
    /// reference for a dangling one, created, used and deleted its own incarnation and removed
    /// our reference with it; our row would then be an orphan that walks still find by key
    /// while the parent may be collected under it. Re-link it (OCC on the parent, dropping
    /// other references of the same name), or remove it if the parent is gone.
    async fn ensure_linked(
        &self,
        parent: &NodeRow,
        child: &str,
        id: &[u8],
        node: &NodeRow,
    ) -> Result<(), MtError> {
        loop {
            self.check_deadline()?;
            let Some(p) = self.get_node(&parent.name).await? else {
                if let Err(e) = self.mutate(node, vec![Mutation::DeleteFromRow], true).await {
                    self.warn("remove orphaned new child", e);
                } else if let Err(e) = self
                    .increment(CounterKind::Nodes, &node.creator, -1, 0, Half::First)
                    .await
                {
                    self.warn("undo node counter", e);
                }
                return Err(MtError::ConcurrentAccess);
            };
            if p.children.iter().any(|c| c.id == id && c.name == child) {
                return Ok(());
            }
            let mut muts: Vec<Mutation> = p
                .children
                .iter()
                .filter(|c| c.name == child)
                .map(|c| delete_column(FAMILY_CHILDREN, &codec::child_qualifier(&c.id, &c.name)))
                .collect();
            muts.push(set(
                FAMILY_CHILDREN,
                &codec::child_qualifier(id, child),
                Timestamp::SERVER_TIME,
                MARKER_VALUE,
            ));
            match self.mutate(&p, muts, false).await {
                Ok(()) => return Ok(()),
                Err(MtError::ConcurrentAccess) => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// §11.2 `delete` (child rows first, depth first).
    fn delete<'a>(&'a self, node: &'a NodeRow, subtree: bool) -> OpFuture<'a, ()> {
        Box::pin(async move {
            if !subtree && !node.children.is_empty() {
                return Err(MtError::NotEmpty {
                    name: node.name.clone(),
                });
            }
            for c in &node.children {
                let child = match self.get_node(&codec::join(&[&node.name, &c.name])).await? {
                    Some(n) => n,
                    None => {
                        self.create_child(node, &c.name, &node.permissions, "", 0)
                            .await?
                    }
                };
                self.delete(&child, true).await?;
            }
            self.mutate(node, vec![Mutation::DeleteFromRow], true)
                .await?;
            let (parent, base) = codec::split(&node.name);
            self.mutate_row(
                &self.ctx.tables.node,
                codec::row_key(parent),
                vec![delete_column(
                    FAMILY_CHILDREN,
                    &codec::child_qualifier(&node.id, base),
                )],
                Half::Second,
            )
            .await?;
            let servers = (node.servers.len() + node.expired_servers.len()) as i64;
            self.increment(
                CounterKind::Servers,
                &node.creator,
                -servers,
                0,
                Half::First,
            )
            .await?;
            self.increment(CounterKind::Nodes, &node.creator, -1, 0, Half::First)
                .await
        })
    }

    /// `deleteAndGC`.
    async fn delete_and_gc(&self, node: &NodeRow, subtree: bool) -> Result<(), MtError> {
        self.delete(node, subtree).await?;
        if let Ok(Some(parent)) = self.get_node(codec::split(&node.name).0).await {
            let _ = self.gc(parent).await;
        }
        Ok(())
    }

    /// §11.3 opportunistic GC.
    fn gc(&self, node: NodeRow) -> GcFuture<'_> {
        Box::pin(async move {
            let mut node = node;
            let mut deleted = false;
            loop {
                if node.name.is_empty() {
                    return (deleted, Ok(()));
                }
                if !node.expired_servers.is_empty() {
                    let muts = node
                        .expired_servers
                        .iter()
                        .map(|s| delete_column(FAMILY_SERVERS, s.server.as_bytes()))
                        .collect();
                    if let Err(e) = self.mutate(&node, muts, false).await {
                        return (deleted, Err(e));
                    }
                    let n = node.expired_servers.len() as i64;
                    if let Err(e) = self
                        .increment(CounterKind::Servers, &node.creator, -n, 0, Half::First)
                        .await
                    {
                        return (deleted, Err(e));
                    }
                    return (true, Ok(()));
                }
                if node.sticky || !node.children.is_empty() || !node.servers.is_empty() {
                    return (deleted, Ok(()));
                }
                if self.now().0.saturating_sub(node.creation_time_us) < self.ctx.gc_grace_us {
                    return (deleted, Ok(()));
                }
                if let Err(e) = self.delete(&node, false).await {
                    return (deleted, Err(e));
                }
                deleted = true;
                let parent = codec::dir(&node.name);
                if parent == "." {
                    return (deleted, Ok(()));
                }
                node = match self.get_node(&parent).await {
                    Err(e) => return (deleted, Err(e)),
                    Ok(None) => return (deleted, Ok(())),
                    Ok(Some(n)) => n,
                };
            }
        })
    }

    /// §11.4 `mount` on a node snapshot; returns the deadline written.
    async fn mount_node(
        &self,
        node: &NodeRow,
        server: &str,
        deadline: Option<i64>,
        ttl_s: u32,
        flags: u32,
        limit: i64,
    ) -> Result<i64, MtError> {
        let flags = MountFlags(flags);
        let mut delta = 1i64;
        let mut muts = Vec::new();
        for s in &node.servers {
            if s.server == server || flags.has(MountFlags::REPLACE) {
                muts.push(delete_column(FAMILY_SERVERS, s.server.as_bytes()));
                delta -= 1;
            }
        }
        self.increment(
            CounterKind::Servers,
            &node.creator,
            delta,
            limit,
            Half::First,
        )
        .await?;
        let deadline = deadline.unwrap_or_else(|| codec::mount_deadline(self.now().0, ttl_s));
        muts.push(set(
            FAMILY_SERVERS,
            server.as_bytes(),
            Timestamp(deadline),
            &codec::encode_flags(flags),
        ));
        if let Err(e) = self.mutate(node, muts, false).await {
            if let Err(w) = self
                .increment(CounterKind::Servers, &node.creator, -delta, 0, Half::First)
                .await
            {
                self.warn("undo server counter", w);
            }
            return Err(e);
        }
        Ok(deadline)
    }

    /// §11.5 `unmount` on a node snapshot.
    async fn unmount_node(&self, node: &NodeRow, server: &str) -> Result<(), MtError> {
        let mut delta = 0i64;
        let mut muts = Vec::new();
        for s in &node.servers {
            if server.is_empty() || s.server == server {
                muts.push(delete_column(FAMILY_SERVERS, s.server.as_bytes()));
                delta -= 1;
            }
        }
        if muts.is_empty() {
            return Ok(());
        }
        self.mutate(node, muts, false).await?;
        if let Ok(Some(n)) = self.get_node(&node.name).await {
            let _ = self.gc(n).await;
        }
        self.increment(CounterKind::Servers, &node.creator, delta, 0, Half::First)
            .await
    }

    /// §11.6 `setPermissions` on a node snapshot (also makes it sticky).
    async fn set_perms_node(&self, node: &NodeRow, perms: &Permissions) -> Result<(), MtError> {
        let ts = Timestamp::SERVER_TIME;
        self.mutate(
            node,
            vec![
                set(
                    FAMILY_META,
                    codec::QUAL_PERMS,
                    ts,
                    &codec::encode_permissions(perms),
                ),
                set(FAMILY_META, codec::QUAL_STICKY, ts, MARKER_VALUE),
            ],
            false,
        )
        .await
    }

    // ---- §12 path walk and authorization ----------------------------------------------------

    /// §12.2.
    fn authorize(&self, perms: &Permissions, wanted: &[&'static str]) -> Result<(), MtError> {
        let caller = &self.ctx.caller;
        if caller.is_server
            || wanted
                .iter()
                .any(|t| perms.includes(t, &caller.blessing_names))
            || self.ctx.global_acl.includes(&caller.blessing_names)
        {
            return Ok(());
        }
        Err(MtError::NoPermissions {
            tag: wanted.first().copied().unwrap_or(tags::ADMIN),
        })
    }

    /// §12.1 `accessNode`.
    async fn access_node(
        &self,
        name: &str,
        create: bool,
        with_servers: bool,
    ) -> Result<(Option<NodeRow>, String), MtError> {
        let mut elems: Vec<&str> = vec![""];
        elems.extend(name.split('/'));
        'restart: loop {
            let mut current = String::new();
            let mut parent: Option<NodeRow> = None;
            for (i, elem) in elems.iter().enumerate() {
                self.check_deadline()?;
                current = codec::join(&[&current, elem]);
                let node = match self.get_node(&current).await? {
                    None => {
                        let Some(p) = parent.as_ref() else {
                            return Err(MtError::NoSuchNameRoot);
                        };
                        if !create {
                            return Err(MtError::NoSuchName { name: current });
                        }
                        self.authorize(&p.permissions, &[tags::CREATE, tags::ADMIN])?;
                        let mut perms = match p.permissions.template(elem) {
                            Some(t) => t,
                            None => {
                                let mut c = p.permissions.clone();
                                if current == name {
                                    for b in &self.ctx.caller.blessing_names {
                                        c.add(b, tags::ADMIN);
                                    }
                                }
                                c
                            }
                        };
                        perms.normalize();
                        let creator = codec::creator_of(&self.ctx.caller);
                        self.create_child(
                            p,
                            elem,
                            &perms,
                            &creator,
                            self.ctx.limits.max_nodes_per_user,
                        )
                        .await?
                    }
                    Some(n) => {
                        match self.gc(n.clone()).await {
                            (_, Err(MtError::ConcurrentAccess)) | (true, Ok(())) => {
                                continue 'restart;
                            }
                            (_, Err(e)) => return Err(e),
                            (false, Ok(())) => {}
                        }
                        n
                    }
                };
                self.authorize(&node.permissions, &[tags::RESOLVE, tags::READ, tags::ADMIN])?;
                if with_servers && !node.servers.is_empty() {
                    let rest = codec::join(&elems[i + 1..]);
                    return Ok((Some(node), rest));
                }
                parent = Some(node);
            }
            return Ok(if with_servers {
                (None, String::new())
            } else {
                (parent, String::new())
            });
        }
    }

    async fn access_existing(&self, name: &str) -> Result<NodeRow, MtError> {
        match self.access_node(name, false, false).await? {
            (Some(n), _) => Ok(n),
            (None, _) => Err(MtError::NoSuchName { name: name.into() }),
        }
    }

    // ---- §13 service operations -------------------------------------------------------------

    pub(crate) async fn mount(
        &self,
        name: &str,
        server: &str,
        ttl_s: u32,
        flags: u32,
    ) -> Result<i64, MtError> {
        let suffix = codec::normalize_suffix(name);
        if !codec::validate_server(server) {
            return Err(MtError::MalformedAddress {
                server: server.into(),
            });
        }
        loop {
            self.check_deadline()?;
            let attempt = async {
                let node = match self.access_node(&suffix, true, false).await? {
                    (Some(n), _) => n,
                    (None, _) => return Err(MtError::NoSuchNameRoot),
                };
                self.authorize(&node.permissions, &[tags::MOUNT, tags::ADMIN])?;
                self.mount_node(
                    &node,
                    server,
                    None,
                    ttl_s,
                    flags,
                    self.ctx.limits.max_servers_per_user,
                )
                .await
            };
            match attempt.await {
                Err(MtError::ConcurrentAccess) => self.backoff().await?,
                r => return r,
            }
        }
    }

    pub(crate) async fn unmount(&self, name: &str, server: &str) -> Result<(), MtError> {
        let suffix = codec::normalize_suffix(name);
        loop {
            self.check_deadline()?;
            let attempt = async {
                let node = self.access_existing(&suffix).await?;
                self.authorize(&node.permissions, &[tags::MOUNT, tags::ADMIN])?;
                self.unmount_node(&node, server).await
            };
            match attempt.await {
                Err(MtError::ConcurrentAccess) => self.backoff().await?,
                r => return r,
            }
        }
    }

    pub(crate) async fn delete_op(&self, name: &str, subtree: bool) -> Result<(), MtError> {
        let suffix = codec::normalize_suffix(name);
        if suffix.is_empty() {
            return Err(MtError::NoAccess);
        }
        loop {
            self.check_deadline()?;
            let attempt = async {
                let node = match self.access_node(&suffix, false, false).await {
                    Err(MtError::NoSuchName { .. }) | Ok((None, _)) => return Ok(()),
                    Err(e) => return Err(e),
                    Ok((Some(n), _)) => n,
                };
                if let Err(first) = self.authorize(&node.permissions, &[tags::ADMIN]) {
                    let parent = codec::clean(codec::split(&suffix).0);
                    match self.access_node(&parent, false, false).await {
                        Ok((Some(p), _))
                            if self.authorize(&p.permissions, &[tags::ADMIN]).is_ok() => {}
                        _ => return Err(first),
                    }
                }
                self.delete_and_gc(&node, subtree).await
            };
            match attempt.await {
                Err(MtError::ConcurrentAccess) => self.backoff().await?,
                r => return r,
            }
        }
    }

    pub(crate) async fn resolve_step(&self, name: &str) -> Result<MountEntry, MtError> {
        let suffix = codec::normalize_suffix(name);
        match self.access_node(&suffix, false, true).await? {
            (Some(n), rest) => Ok(entry_of(rest, &n)),
            (None, _) => Err(MtError::NoSuchName { name: suffix }),
        }
    }

    pub(crate) async fn glob(&self, name: &str, pattern: &str) -> Result<(), MtError> {
        let suffix = codec::normalize_suffix(name);
        let g = Glob::parse(pattern).map_err(|_| MtError::BadPattern)?;
        if let (Some(n), rest) = self.access_node(&suffix, false, true).await? {
            let mut entry = entry_of(String::new(), &n);
            for s in &mut entry.servers {
                s.server = codec::join(&[&s.server, &rest]);
            }
            self.io.emit(MtEvent::GlobEntry(entry));
            return Ok(());
        }
        let mut queue: VecDeque<(String, Glob)> = VecDeque::new();
        queue.push_back((String::new(), g));
        while let Some((name, g)) = queue.pop_front() {
            self.check_deadline()?;
            let node = match self
                .access_node(&codec::join(&[&suffix, &name]), false, false)
                .await
            {
                Ok((Some(n), _)) => n,
                _ => continue,
            };
            if !node.servers.is_empty() {
                self.io.emit(MtEvent::GlobEntry(entry_of(name, &node)));
                continue;
            }
            if g.elements() == 0 {
                self.io.emit(MtEvent::GlobEntry(MountEntry {
                    name: name.clone(),
                    servers: Vec::new(),
                    mt: false,
                    leaf: false,
                }));
            }
            if g.is_empty() {
                continue;
            }
            for c in &node.children {
                if g.head_matches(&c.name) {
                    queue.push_back((codec::join(&[&name, &c.name]), g.tail()));
                }
            }
        }
        Ok(())
    }

    pub(crate) async fn get_permissions(&self, name: &str) -> Result<PermsAndVersion, MtError> {
        let suffix = codec::normalize_suffix(name);
        let node = self.access_existing(&suffix).await?;
        Ok(PermsAndVersion {
            perms: node.permissions.clone(),
            version: node.version_str(),
        })
    }

    pub(crate) async fn set_permissions(
        &self,
        name: &str,
        mut perms: Permissions,
        version: &str,
    ) -> Result<PermsAndVersion, MtError> {
        let suffix = codec::normalize_suffix(name);
        if self.authorize(&perms, &[tags::ADMIN]).is_err() {
            for b in &self.ctx.caller.blessing_names {
                perms.add(b, tags::ADMIN);
            }
        }
        perms.normalize();
        loop {
            self.check_deadline()?;
            let attempt = async {
                let node = match self.access_node(&suffix, true, false).await? {
                    (Some(n), _) => n,
                    (None, _) => return Err(MtError::NoSuchNameRoot),
                };
                self.authorize(&node.permissions, &[tags::ADMIN])?;
                if !version.is_empty() && version.as_bytes() != node.version.as_slice() {
                    return Err(MtError::BadVersion);
                }
                self.set_perms_node(&node, &perms).await?;
                Ok(PermsAndVersion {
                    perms: perms.clone(),
                    version: codec::next_version(&node.version)?,
                })
            };
            match attempt.await {
                Err(MtError::ConcurrentAccess) => self.backoff().await?,
                r => return r,
            }
        }
    }

    // ---- §16 initial nodes, fsck, counters --------------------------------------------------

    pub(crate) async fn create_initial_nodes(
        &self,
        perms_file: Option<BTreeMap<String, Permissions>>,
    ) -> Result<(), MtError> {
        let Some(file) = perms_file else {
            return self
                .create_row(
                    "",
                    &codec::default_root_permissions(),
                    "",
                    codec::ROOT_ID,
                    0,
                    Half::First,
                )
                .await;
        };
        // Fold legacy `x/%%` entries into `x` as `%%/<tag>` tags.
        let mut nodes: BTreeMap<String, Permissions> = BTreeMap::new();
        let mut templates: Vec<(String, Permissions)> = Vec::new();
        for (name, perms) in file {
            match name.strip_suffix("/%%") {
                Some(x) => templates.push((x.into(), perms)),
                None => {
                    nodes.insert(name, perms);
                }
            }
        }
        for (x, perms) in templates {
            let target = nodes.entry(x).or_default();
            for (tag, acl) in perms.0 {
                target.0.insert(alloc::format!("%%/{tag}"), acl);
            }
        }
        for (name, perms) in &nodes {
            self.check_deadline()?;
            if name.is_empty() {
                self.create_row("", perms, "", codec::ROOT_ID, 0, Half::First)
                    .await?;
                continue;
            }
            let mut parent_name = String::new();
            let mut node = None;
            for e in name.split('/') {
                let current = codec::join(&[&parent_name, e]);
                let n = match self.get_node(&current).await? {
                    Some(n) => n,
                    None => {
                        let parent = self
                            .get_node(&parent_name)
                            .await?
                            .ok_or(MtError::NoSuchNameRoot)?;
                        self.create_child(&parent, e, &parent.permissions, "", 0)
                            .await?
                    }
                };
                node = Some(n);
                parent_name = current;
            }
            if let Some(n) = node {
                self.set_perms_node(&n, perms).await?;
            }
        }
        Ok(())
    }

    pub(crate) async fn read_counters(&self) -> Result<BTreeMap<Vec<u8>, i64>, MtError> {
        let rows = self
            .scan(
                &self.ctx.tables.counter,
                RowSet::all(),
                Some(RowFilter::CellsPerColumnLimit(1)),
                0,
            )
            .await?;
        rows.iter()
            .map(|r| {
                codec::decode_counter_row(r)
                    .map(|v| (r.key.clone(), v))
                    .map_err(|e| MtError::Internal {
                        what: e.to_string(),
                    })
            })
            .collect()
    }

    fn finding(&self, row_key: &[u8], kind: FindingKind, fixed: bool) {
        self.io.emit(MtEvent::FsckFinding {
            row_key: row_key.to_vec(),
            kind,
            fixed,
        });
    }

    /// §16 fsck: one pass over the node table; returns the inconsistencies counted.
    async fn fsck_pass(&self, fix: bool, summary: &mut FsckSummary) -> Result<u64, MtError> {
        let mut count = 0u64;
        let mut start: Option<Vec<u8>> = None;
        loop {
            let rows = match &start {
                None => RowSet::all(),
                Some(k) => RowSet::range(RowRange {
                    start: rowkit_codec::model::KeyBound::Open(k.clone()),
                    end: rowkit_codec::model::KeyBound::Unbounded,
                }),
            };
            let page = self
                .scan(
                    &self.ctx.tables.node,
                    rows,
                    Some(RowFilter::CellsPerColumnLimit(1)),
                    FSCK_PAGE,
                )
                .await?;
            let full = page.len() as i64 >= FSCK_PAGE;
            start = page.last().map(|r| r.key.clone());
            for row in &page {
                self.check_deadline()?;
                let node = match codec::decode_node(row, self.now().0) {
                    Ok(n) => n,
                    Err(_) => {
                        if !summary.undecodable.contains(&row.key) {
                            summary.undecodable.push(row.key.clone());
                        }
                        self.finding(&row.key, FindingKind::Undecodable, false);
                        continue;
                    }
                };
                if !node.name.is_empty() {
                    let (parent, base) = codec::split(&node.name);
                    let orphan = match self.get_node(parent).await {
                        Err(_) => {
                            count += 1;
                            self.finding(&row.key, FindingKind::StoreError, false);
                            continue;
                        }
                        Ok(None) => true,
                        Ok(Some(p)) => {
                            !p.children.iter().any(|c| c.name == base && c.id == node.id)
                        }
                    };
                    if orphan {
                        count += 1;
                        let fixed = fix && self.delete(&node, true).await.is_ok();
                        if fixed {
                            summary.fixed.push(row.key.clone());
                        }
                        self.finding(&row.key, FindingKind::Orphan, fixed);
                        continue;
                    }
                }
                let mut dangling = Vec::new();
                let mut store_error = false;
                for c in &node.children {
                    match self.get_node(&codec::join(&[&node.name, &c.name])).await {
                        Err(_) => store_error = true,
                        Ok(None) => dangling.push(codec::child_qualifier(&c.id, &c.name)),
                        Ok(Some(ch)) if ch.id != c.id => {
                            dangling.push(codec::child_qualifier(&c.id, &c.name))
                        }
                        Ok(Some(_)) => {}
                    }
                }
                if store_error {
                    count += 1;
                    self.finding(&row.key, FindingKind::StoreError, false);
                } else if !dangling.is_empty() {
                    count += 1;
                    let muts = dangling
                        .iter()
                        .map(|q| delete_column(FAMILY_CHILDREN, q))
                        .collect();
                    let fixed = fix && self.mutate(&node, muts, false).await.is_ok();
                    if fixed {
                        summary.fixed.push(row.key.clone());
                    }
                    self.finding(&row.key, FindingKind::Dangling, fixed);
                }
            }
            if !full {
                return Ok(count);
            }
        }
    }

    pub(crate) async fn fsck(&self, fix: bool) -> Result<FsckSummary, MtError> {
        let mut summary = FsckSummary::default();
        loop {
            self.check_deadline()?;
            summary.passes += 1;
            let count = self.fsck_pass(fix, &mut summary).await?;
            summary.inconsistent += count;
            if !(fix && count > 0) {
                break;
            }
        }
        if fix {
            let counters = self
                .scan(&self.ctx.tables.counter, RowSet::all(), None, 0)
                .await?;
            for row in counters {
                self.mutate_row(
                    &self.ctx.tables.counter,
                    row.key,
                    vec![Mutation::DeleteFromRow],
                    Half::First,
                )
                .await?;
            }
            let nodes = self
                .scan(
                    &self.ctx.tables.node,
                    RowSet::all(),
                    Some(RowFilter::CellsPerColumnLimit(1)),
                    0,
                )
                .await?;
            for row in nodes {
                let Ok(node) = codec::decode_node(&row, self.now().0) else {
                    continue;
                };
                self.increment(CounterKind::Nodes, &node.creator, 1, 0, Half::First)
                    .await?;
                let servers = (node.servers.len() + node.expired_servers.len()) as i64;
                self.increment(CounterKind::Servers, &node.creator, servers, 0, Half::First)
                    .await?;
            }
        }
        if (!fix && summary.inconsistent > 0) || !summary.undecodable.is_empty() {
            return Err(MtError::FsckInconsistent(summary));
        }
        Ok(summary)
    }

    pub(crate) async fn primitive(&self, p: Primitive) -> Result<PrimitiveOutput, MtError> {
        match p {
            Primitive::GetNode { name } => Ok(PrimitiveOutput::Node(
                self.get_node(&name).await?.map(Box::new),
            )),
            Primitive::CreateRow {
                name,
                perms,
                creator,
                id,
                limit,
            } => {
                self.create_row(&name, &perms, &creator, &id, limit, Half::First)
                    .await?;
                Ok(PrimitiveOutput::Done)
            }
            Primitive::CreateChild {
                parent,
                child,
                perms,
                creator,
                limit,
            } => Ok(PrimitiveOutput::Node(Some(Box::new(
                self.create_child(&parent, &child, &perms, &creator, limit)
                    .await?,
            )))),
            Primitive::Delete { node, subtree } => {
                self.delete(&node, subtree).await?;
                Ok(PrimitiveOutput::Done)
            }
            Primitive::Mount {
                node,
                server,
                deadline_us,
                flags,
                limit,
            } => {
                self.mount_node(&node, &server, Some(deadline_us), 0, flags, limit)
                    .await?;
                Ok(PrimitiveOutput::Done)
            }
            Primitive::SetPermissions { node, perms } => {
                self.set_perms_node(&node, &perms).await?;
                Ok(PrimitiveOutput::Done)
            }
        }
    }
}

fn unexpected(r: &Response) -> MtError {
    MtError::Store(StoreError::new(
        crate::Code::Internal,
        alloc::format!("unexpected response {r:?}"),
    ))
}
