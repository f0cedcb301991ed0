//! CreateInitialNodes (§16): the root, or the nodes of a permissions file.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::mounttable::{self as codec};

use crate::mounttable::calls::{Half, MtIo, Node, NodeRead, Occ, Progress, check_deadline, ended};
use crate::mounttable::nodes::{CreateChild, CreateRow, set_perms};
use crate::mounttable::{MountTableSchema, MtError, MtRun};
use crate::operation::Flow;
use crate::operation::settled;
use crate::ready;

/// The flow of [`CreateInitialNodes`](crate::mounttable::CreateInitialNodes): the root with default
/// permissions, or every node of a permissions file in name order (creating intermediate
/// nodes with their parent's permissions), each then given its permissions.
#[derive(Debug)]
pub struct CreateInitialNodesFlow {
    /// The file's nodes in name order.
    nodes: Vec<(String, codec::Permissions)>,
    /// Index of the node being created.
    at: usize,
    phase: InitialPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum InitialPhase {
    /// No file: the default root.
    DefaultRoot(CreateRow),
    /// The file's next node is to be created.
    NextNode,
    /// The file names the root.
    Root(CreateRow),
    /// Walking the current node's path.
    Path {
        path: PathStep,
        wait: PathWait,
    },
    /// The current node is given its permissions.
    SettingPerms(Occ),
    Done,
}

/// Where the walk down one file node's path is.
#[derive(Debug)]
pub(in crate::mounttable) struct PathStep {
    elems: Vec<String>,
    /// Index of the element being read or created.
    at: usize,
    /// The name of the element's parent.
    parent_name: String,
    /// The node of the last element passed.
    node: Option<Node>,
}

#[derive(Debug)]
pub(in crate::mounttable) enum PathWait {
    Element(NodeRead),
    /// The element is missing: its parent is read to create it.
    Parent(NodeRead),
    Creating(CreateChild),
}

impl CreateInitialNodesFlow {
    pub(in crate::mounttable) fn new(
        perms_file: Option<BTreeMap<String, codec::Permissions>>,
    ) -> Self {
        let Some(file) = perms_file else {
            let root = CreateRow::new(
                "",
                &codec::default_root_permissions(),
                "",
                codec::ROOT_ID,
                0,
                Half::First,
            );
            return CreateInitialNodesFlow {
                nodes: Vec::new(),
                at: 0,
                phase: InitialPhase::DefaultRoot(root),
            };
        };
        // Fold legacy `x/%%` entries into `x` as `%%/<tag>` tags.
        let mut nodes: BTreeMap<String, codec::Permissions> = BTreeMap::new();
        let mut templates: Vec<(String, codec::Permissions)> = Vec::new();
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
        CreateInitialNodesFlow {
            nodes: nodes.into_iter().collect(),
            at: 0,
            phase: InitialPhase::NextNode,
        }
    }

    /// Starts reading element `at` of the path, or sets the node's permissions past the last.
    fn next_elem(&mut self, io: &mut MtIo, ctx: &MtRun, path: PathStep) -> bool {
        if let Some(e) = path.elems.get(path.at) {
            let current = codec::join(&[&path.parent_name, e]);
            let wait = PathWait::Element(NodeRead::start(io, ctx, &current));
            self.phase = InitialPhase::Path { path, wait };
            return false;
        }
        let (Some(node), Some((_, perms))) = (path.node.as_ref(), self.nodes.get(self.at)) else {
            return true;
        };
        self.phase = InitialPhase::SettingPerms(set_perms(io, ctx, node, perms));
        false
    }
}

impl Flow for CreateInitialNodesFlow {
    type Schema = MountTableSchema;
    type Output = ();

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<()> {
        use InitialPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::DefaultRoot(mut root) => {
                    return ready!(settled(root.advance(io, ctx)), self.phase => P::DefaultRoot(root))
                        .map(Some);
                }
                P::NextNode => {
                    let Some((name, perms)) = self.nodes.get(self.at) else {
                        return Ok(Some(()));
                    };
                    check_deadline(io, ctx)?;
                    if name.is_empty() {
                        let root = CreateRow::new("", perms, "", codec::ROOT_ID, 0, Half::First);
                        self.phase = P::Root(root);
                        continue;
                    }
                    let elems: Vec<String> = name.split('/').map(String::from).collect();
                    let path = PathStep {
                        elems,
                        at: 0,
                        parent_name: String::new(),
                        node: None,
                    };
                    if self.next_elem(io, ctx, path) {
                        return Ok(Some(()));
                    }
                }
                P::Root(mut root) => {
                    ready!(root.advance(io, ctx), self.phase => P::Root(root));
                    self.at += 1;
                    self.phase = P::NextNode;
                }
                P::Path { mut path, wait } => {
                    let node = match wait {
                        PathWait::Element(mut read) => {
                            match ready!(read.poll(io), self.phase => P::Path {
                                path,
                                wait: PathWait::Element(read)
                            }) {
                                Some(n) => n,
                                None => {
                                    let read = NodeRead::start(io, ctx, &path.parent_name);
                                    let wait = PathWait::Parent(read);
                                    self.phase = P::Path { path, wait };
                                    continue;
                                }
                            }
                        }
                        PathWait::Parent(mut read) => {
                            let parent = ready!(read.poll(io), self.phase => P::Path {
                                path,
                                wait: PathWait::Parent(read)
                            })
                            .ok_or(MtError::NoSuchNameRoot)?;
                            let elem = path.elems.get(path.at).cloned().unwrap_or_default();
                            let perms = parent.permissions.permissions().clone();
                            let wait =
                                PathWait::Creating(CreateChild::new(parent, &elem, &perms, "", 0));
                            self.phase = P::Path { path, wait };
                            continue;
                        }
                        PathWait::Creating(mut create) => {
                            ready!(create.advance(io, ctx), self.phase => P::Path {
                                path,
                                wait: PathWait::Creating(create)
                            })
                        }
                    };
                    let elem = path.elems.get(path.at).cloned().unwrap_or_default();
                    path.parent_name = codec::join(&[&path.parent_name, &elem]);
                    path.node = Some(node);
                    path.at += 1;
                    if self.next_elem(io, ctx, path) {
                        return Ok(Some(()));
                    }
                }
                P::SettingPerms(mut occ) => {
                    ready!(occ.poll(io), self.phase => P::SettingPerms(occ));
                    self.at += 1;
                    self.phase = P::NextNode;
                }
                P::Done => return Err(ended()),
            }
        }
    }
}
