//! §10.2 `createRow` and §11.1 `createChild`, with the re-link of a child its parent lost.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::model::{Mutation, RowFilter, Timestamp};
use rowkit_codec::mounttable::{
    self as codec, CounterKind, FAMILY_CHILDREN, FAMILY_META, MARKER_VALUE, Permissions,
};

use super::counted::{CountedWrite, NodeWrite};
use super::increment::Increment;
use super::outcome_unknown;
use super::stale_refs;
use crate::children::ChildId;
use crate::mounttable::calls::{
    Half, MtIo, Node, NodeRead, Occ, Progress, cam, check_deadline, delete_column, ended, put_node,
    warn,
};
use crate::mounttable::{MtError, MtRun};
use crate::operation::settled;
use crate::ready;

/// §10.2: count the node, then write the row only if it has no creator yet; undo the count if
/// the row exists or the write fails.
pub(in crate::mounttable) type CreateRow = CountedWrite<NewRow>;

impl CreateRow {
    pub(in crate::mounttable) fn new(
        name: &str,
        perms: &Permissions,
        creator: &str,
        id: &[u8],
        limit: i64,
        half: Half,
    ) -> CreateRow {
        let creator = if creator.is_empty() {
            codec::SERVER_USER
        } else {
            creator
        };
        let count = Increment::new(CounterKind::Nodes, creator, 1, limit, half);
        let row = NewRow {
            name: name.into(),
            perms: perms.clone(),
            creator: creator.into(),
            id: id.to_vec(),
            half,
        };
        CountedWrite::start(count, row)
    }
}

/// The write of §10.2: the node row, only if it has no creator yet.
#[derive(Debug)]
pub(in crate::mounttable) struct NewRow {
    name: String,
    perms: Permissions,
    creator: String,
    id: Vec<u8>,
    half: Half,
}

impl NodeWrite for NewRow {
    type Output = ();
    type Call = ChildId;

    fn send(&mut self, io: &mut MtIo, ctx: &MtRun) -> ChildId {
        let version = codec::format_version((io.next_seed() >> 32) as u32);
        let predicate = RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex(FAMILY_META.into()),
            RowFilter::ColumnQualifierRegex(codec::QUAL_CREATOR.to_vec()),
        ]);
        let ts = Timestamp::SERVER_TIME;
        let json = codec::encode_permissions(&self.perms);
        let mutations = vec![
            Mutation::set_cell(FAMILY_META, codec::QUAL_ID, ts, self.id.as_slice()),
            Mutation::set_cell(
                FAMILY_META,
                codec::QUAL_CREATOR,
                ts,
                self.creator.as_bytes(),
            ),
            Mutation::set_cell(FAMILY_META, codec::QUAL_PERMS, ts, json.as_slice()),
            Mutation::set_cell(FAMILY_META, codec::QUAL_VERSION, ts, version.as_bytes()),
        ];
        let key = codec::row_key(&self.name);
        cam(io, ctx, key, predicate, mutations, self.half)
    }

    /// The row is written unless the predicate (a creator) matched.
    fn poll(&mut self, call: &mut ChildId, io: &mut MtIo) -> Progress<()> {
        if ready!(io.matched(*call)) {
            Err(MtError::ConcurrentAccess)
        } else {
            Ok(Some(()))
        }
    }

    /// rowkit fix: the row may exist (its answer was lost). Keep the count, as for a row that
    /// does: a stale counter is tolerated and fsck recounts.
    fn keeps_count(&self, error: &MtError) -> bool {
        outcome_unknown(error)
    }
}

/// §11.1: reference the child in the parent (OCC), create its row (rolling the reference back
/// on failure), drop stale references of the same name, read the new node back and make sure
/// it is still linked. Gives the new node.
#[derive(Debug)]
pub(in crate::mounttable) struct CreateChild {
    parent: Node,
    child: String,
    perms: Permissions,
    creator: String,
    limit: i64,
    qualifier: Vec<u8>,
    child_name: String,
    /// Re-creating a dangling child of a node being deleted (§11.2 step 2): every same-name
    /// reference goes, as in btmtd (the parent row and all its references go next anyway).
    repair: bool,
    phase: CreateChildPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum CreateChildPhase {
    Start,
    Referencing(Occ),
    CreatingRow(CreateRow),
    /// The row was not created (`error`): the reference is being taken back.
    RollingBack {
        put: ChildId,
        error: MtError,
    },
    DroppingStale(ChildId),
    ReadingBack(NodeRead),
    /// The new node is read back; is it still linked?
    Linking {
        link: EnsureLinked,
        node: Node,
    },
    Done,
}

impl CreateChild {
    pub(in crate::mounttable) fn new(
        parent: Node,
        child: &str,
        perms: &Permissions,
        creator: &str,
        limit: i64,
    ) -> CreateChild {
        CreateChild {
            qualifier: codec::child_qualifier(&parent.version, child),
            child_name: codec::join(&[&parent.name, child]),
            parent,
            child: child.into(),
            perms: perms.clone(),
            creator: creator.into(),
            limit,
            repair: false,
            phase: CreateChildPhase::Start,
        }
    }

    /// [`CreateChild::new`] re-creating a dangling child of a node being deleted.
    pub(in crate::mounttable) fn repair(parent: Node, child: &str) -> CreateChild {
        let perms = parent.permissions.permissions().clone();
        CreateChild {
            repair: true,
            ..CreateChild::new(parent, child, &perms, "", 0)
        }
    }

    pub(in crate::mounttable) fn advance(
        &mut self,
        io: &mut MtIo,
        ctx: &mut MtRun,
    ) -> Progress<Node> {
        use CreateChildPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    if self.parent.version.len() != 8 {
                        return Err(codec::VersionError {
                            value: self.parent.version_str(),
                            reason: "a parent version used as a child id must be 8 bytes",
                        }
                        .into());
                    }
                    let reference = vec![Mutation::set_cell(
                        FAMILY_CHILDREN,
                        &self.qualifier,
                        Timestamp::SERVER_TIME,
                        MARKER_VALUE,
                    )];
                    self.phase =
                        P::Referencing(Occ::start(io, ctx, &self.parent, reference, false));
                }
                P::Referencing(mut occ) => {
                    ready!(occ.poll(io), self.phase => P::Referencing(occ));
                    // The parent's version is the child's id (§11.1).
                    self.phase = P::CreatingRow(CreateRow::new(
                        &self.child_name,
                        &self.perms,
                        &self.creator,
                        &self.parent.version,
                        self.limit,
                        Half::Second,
                    ));
                }
                P::CreatingRow(mut row) => {
                    if let Err(error) =
                        ready!(settled(row.advance(io, ctx)), self.phase => P::CreatingRow(row))
                    {
                        if outcome_unknown(&error) {
                            // rowkit fix: the child row may exist (the createRow answer was
                            // lost). Rolling the reference back would orphan it, and a later
                            // walk would use that orphan until fsck deletes it with whatever
                            // was mounted on it. Keeping the reference leaves at worst a
                            // dangling one, which §17 tolerates and re-creation or fsck
                            // repairs.
                            return Err(error);
                        }
                        let undo = vec![delete_column(FAMILY_CHILDREN, &self.qualifier)];
                        let put = put_node(io, ctx, &self.parent.name, undo, Half::First);
                        self.phase = P::RollingBack { put, error };
                        continue;
                    }
                    let stale = stale_refs(&self.parent, &self.child, self.repair, io.now());
                    self.phase = if stale.is_empty() {
                        P::ReadingBack(NodeRead::start(io, ctx, &self.child_name))
                    } else {
                        P::DroppingStale(put_node(io, ctx, &self.parent.name, stale, Half::First))
                    };
                }
                P::RollingBack { put, error } => {
                    let written = io.written(put);
                    if let Err(w) =
                        ready!(settled(written), self.phase => P::RollingBack { put, error })
                    {
                        warn(io, "roll back child reference", w);
                    }
                    return Err(error);
                }
                P::DroppingStale(put) => {
                    if let Err(w) =
                        ready!(settled(io.written(put)), self.phase => P::DroppingStale(put))
                    {
                        warn(io, "delete stale child references", w);
                    }
                    self.phase = P::ReadingBack(NodeRead::start(io, ctx, &self.child_name));
                }
                P::ReadingBack(mut read) => {
                    let node = ready!(read.poll(io), self.phase => P::ReadingBack(read))
                        .ok_or(MtError::ConcurrentAccess)?;
                    // rowkit fix: the row read back must be the incarnation we created. If
                    // ours was collected and another caller created its own in between, that
                    // one is not ours to return (its link is its creator's to check, and ours
                    // is dangling).
                    if node.id != self.parent.version {
                        return Err(MtError::ConcurrentAccess);
                    }
                    let link = EnsureLinked::new(
                        &self.parent.name,
                        &self.child,
                        &self.parent.version,
                        node.clone(),
                    );
                    self.phase = P::Linking { link, node };
                }
                P::Linking { mut link, node } => {
                    ready!(link.advance(io, ctx), self.phase => P::Linking { link, node });
                    return Ok(Some(node));
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

/// rowkit fix (not in btmtd): after creating a child row, make sure the parent still
/// references it. Between our reference and our row, another caller may have taken our
/// reference for a dangling one, created, used and deleted its own incarnation and removed
/// our reference with it; our row would then be an orphan that walks still find by key while
/// the parent may be collected under it. Re-link it (OCC on the parent, dropping other
/// references of the same name), or remove it if the parent is gone.
#[derive(Debug)]
pub(in crate::mounttable) struct EnsureLinked {
    parent_name: String,
    child: String,
    id: Vec<u8>,
    node: Node,
    phase: LinkPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum LinkPhase {
    /// A round starts: read the parent again.
    Check,
    ParentRead(NodeRead),
    /// Unlinked: is our incarnation still there (relinking based on `parent`)?
    ChildReread {
        read: NodeRead,
        parent: Node,
    },
    Relinking(Occ),
    /// The parent is gone: our row goes, then its reference, then its count.
    RemovingOrphan(Occ),
    UnreferencingOrphan(ChildId),
    UncountingOrphan(Increment),
    Done,
}

impl EnsureLinked {
    fn new(parent_name: &str, child: &str, id: &[u8], node: Node) -> EnsureLinked {
        EnsureLinked {
            parent_name: parent_name.into(),
            child: child.into(),
            id: id.to_vec(),
            node,
            phase: LinkPhase::Check,
        }
    }

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use LinkPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Check => {
                    check_deadline(io, ctx)?;
                    self.phase = P::ParentRead(NodeRead::start(io, ctx, &self.parent_name));
                }
                P::ParentRead(mut read) => {
                    let Some(parent) = ready!(read.poll(io), self.phase => P::ParentRead(read))
                    else {
                        let remove = vec![Mutation::DeleteFromRow];
                        self.phase =
                            P::RemovingOrphan(Occ::start(io, ctx, &self.node, remove, true));
                        continue;
                    };
                    if parent
                        .children
                        .iter()
                        .any(|c| c.id == self.id && c.name == self.child)
                    {
                        return Ok(Some(()));
                    }
                    // Unlinked. Relink only the incarnation that still exists: a collector
                    // may have deleted our row (its reference removal is a plain write, so the
                    // parent version does not tell), and relinking a deleted incarnation would
                    // drop the reference of the live one and orphan it.
                    let read = NodeRead::start(io, ctx, &self.node.name);
                    self.phase = P::ChildReread { read, parent };
                }
                P::ChildReread { mut read, parent } => {
                    let now = ready!(read.poll(io), self.phase => P::ChildReread { read, parent });
                    if !matches!(now, Some(n) if n.id == self.id) {
                        // Our incarnation is gone: the operation retries the walk.
                        return Err(MtError::ConcurrentAccess);
                    }
                    let mut mutations = stale_refs(&parent, &self.child, false, io.now());
                    mutations.push(Mutation::set_cell(
                        FAMILY_CHILDREN,
                        &codec::child_qualifier(&self.id, &self.child),
                        Timestamp::SERVER_TIME,
                        MARKER_VALUE,
                    ));
                    self.phase = P::Relinking(Occ::start(io, ctx, &parent, mutations, false));
                }
                P::Relinking(mut occ) => {
                    match ready!(settled(occ.poll(io)), self.phase => P::Relinking(occ)) {
                        Ok(()) => return Ok(Some(())),
                        Err(MtError::ConcurrentAccess) => self.phase = P::Check,
                        Err(e) => return Err(e),
                    }
                }
                P::RemovingOrphan(mut occ) => {
                    if let Err(e) =
                        ready!(settled(occ.poll(io)), self.phase => P::RemovingOrphan(occ))
                    {
                        warn(io, "remove orphaned new child", e);
                        return Err(MtError::ConcurrentAccess);
                    }
                    // A walker may have adopted the row into a parent created again meanwhile
                    // (`Walk`): its reference goes with the row.
                    let qualifier = codec::child_qualifier(&self.id, &self.child);
                    let unref = vec![delete_column(FAMILY_CHILDREN, &qualifier)];
                    let put = put_node(io, ctx, &self.parent_name, unref, Half::First);
                    self.phase = P::UnreferencingOrphan(put);
                }
                P::UnreferencingOrphan(put) => {
                    if let Err(e) =
                        ready!(settled(io.written(put)), self.phase => P::UnreferencingOrphan(put))
                    {
                        warn(io, "remove the reference of an orphaned new child", e);
                    }
                    let undo = Increment::unlimited(CounterKind::Nodes, &self.node.creator, -1);
                    self.phase = P::UncountingOrphan(undo);
                }
                P::UncountingOrphan(mut undo) => {
                    if let Err(e) = ready!(settled(undo.advance(io, ctx)), self.phase => P::UncountingOrphan(undo))
                    {
                        warn(io, "undo node counter", e);
                    }
                    return Err(MtError::ConcurrentAccess);
                }
                P::Done => return Err(ended()),
            }
        }
    }
}
