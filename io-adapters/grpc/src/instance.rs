//! `google.bigtable.admin.v2.BigtableInstanceAdmin`: what clients ask to learn about their
//! instance. The server is one instance, named by whatever project and instance a request
//! names, with one cluster (`{instance}-c1`, location `local`, SSD, one node, ready) and one app
//! profile (`default`, routed to that cluster). Reads answer that; every create, update and
//! delete (instances, clusters, app profiles, logical and materialized views) and the IAM
//! policy calls answer `PERMISSION_DENIED` as production does for a caller without that
//! permission: the shape of the instance is not the caller's to change here. No call needs
//! `google.longrunning`: only the denied ones return operations.

use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2 as admin;
use googleapis_tonic_google_bigtable_admin_v2::google::iam::v1 as iam;
use googleapis_tonic_google_bigtable_admin_v2::google::longrunning::Operation;
use rowkit_proto as convert;
use tonic::{Request as GrpcRequest, Response as GrpcResponse, Status};

use crate::generated::admin::bigtable_instance_admin_server::BigtableInstanceAdmin;
use crate::names::{self, Instance};

/// The instance `ListInstances` lists: that request names only a project, and the server
/// answers to every instance name, so it lists the instance under this id.
pub(crate) const LISTED_INSTANCE: &str = "rowkit";

/// The one cluster's location id (`projects/{project}/locations/local`).
const LOCATION: &str = "local";

/// The one app profile's id (production's default profile).
const DEFAULT_APP_PROFILE: &str = "default";

/// The permissions this server grants every caller: the data and table calls it serves, and
/// reading the instance. `TestIamPermissions` answers the requested ones among these.
const GRANTED_PERMISSIONS: &[&str] = &[
    "bigtable.tables.checkConsistency",
    "bigtable.tables.create",
    "bigtable.tables.delete",
    "bigtable.tables.generateConsistencyToken",
    "bigtable.tables.get",
    "bigtable.tables.list",
    "bigtable.tables.mutateRows",
    "bigtable.tables.readRows",
    "bigtable.tables.sampleRowKeys",
    "bigtable.tables.update",
    "bigtable.instances.get",
    "bigtable.instances.list",
    "bigtable.clusters.get",
    "bigtable.clusters.list",
    "bigtable.appProfiles.get",
    "bigtable.appProfiles.list",
];

fn status(e: rowkit_statemachines::StoreError) -> Status {
    convert::error_to_status(&e)
}

/// Production's answer to a caller without `permission`.
pub(crate) fn denied(permission: &str) -> Status {
    Status::permission_denied(format!(
        "Access denied. Missing IAM permission: {permission}."
    ))
}

/// The requested permissions this server grants.
pub(crate) fn granted(request: iam::TestIamPermissionsRequest) -> iam::TestIamPermissionsResponse {
    iam::TestIamPermissionsResponse {
        permissions: request
            .permissions
            .into_iter()
            .filter(|p| GRANTED_PERMISSIONS.contains(&p.as_str()))
            .collect(),
    }
}

/// The refusal of a `GetIamPolicy`/`SetIamPolicy` on `resource` (`verb` is `getIamPolicy` or
/// `setIamPolicy`), naming the permission it needs: a table's, else the instance's.
pub(crate) fn iam_denied(resource: &str, verb: &str) -> Status {
    let kind = if resource.contains("/tables/") {
        "tables"
    } else {
        "instances"
    };
    denied(&format!("bigtable.{kind}.{verb}"))
}

/// The id of the instance's one cluster (the JSON admin's too).
pub(crate) fn cluster_id(instance: &str) -> String {
    rowkit_rest::admin::cluster_id(instance)
}

fn instance_pb(at: &Instance) -> admin::Instance {
    admin::Instance {
        name: at.name(),
        display_name: at.instance.clone(),
        state: admin::instance::State::Ready as i32,
        r#type: admin::instance::Type::Production as i32,
        ..Default::default()
    }
}

fn cluster_pb(at: &Instance) -> admin::Cluster {
    admin::Cluster {
        name: format!("{}/clusters/{}", at.name(), cluster_id(&at.instance)),
        location: format!("projects/{}/locations/{LOCATION}", at.project),
        state: admin::cluster::State::Ready as i32,
        serve_nodes: 1,
        node_scaling_factor: admin::cluster::NodeScalingFactor::NodeScalingFactor1x as i32,
        default_storage_type: admin::StorageType::Ssd as i32,
        ..Default::default()
    }
}

fn app_profile_pb(at: &Instance) -> admin::AppProfile {
    use admin::app_profile::{
        Isolation, Priority, RoutingPolicy, SingleClusterRouting, StandardIsolation,
    };
    admin::AppProfile {
        name: format!("{}/appProfiles/{DEFAULT_APP_PROFILE}", at.name()),
        etag: String::new(),
        description: "Default application profile".into(),
        // One cluster: single-cluster routing, which also allows CheckAndMutateRow and
        // ReadModifyWriteRow.
        routing_policy: Some(RoutingPolicy::SingleClusterRouting(SingleClusterRouting {
            cluster_id: cluster_id(&at.instance),
            allow_transactional_writes: true,
        })),
        isolation: Some(Isolation::StandardIsolation(StandardIsolation {
            priority: Priority::High as i32,
        })),
    }
}

/// The instance a list call's parent names: `-` (every instance) is the listed one.
fn list_parent(parent: &str) -> Result<Instance, Status> {
    let mut at = names::instance(parent).map_err(status)?;
    if at.instance == "-" {
        at.instance = LISTED_INSTANCE.to_string();
    }
    Ok(at)
}

fn not_found(what: &str, name: &str) -> Status {
    Status::not_found(format!("{what} {name:?} not found"))
}

/// The instance admin service; it holds no state: every answer follows from the name asked.
pub(crate) struct InstanceAdminService;

#[tonic::async_trait]
impl BigtableInstanceAdmin for InstanceAdminService {
    async fn create_instance(
        &self,
        _: GrpcRequest<admin::CreateInstanceRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.instances.create"))
    }

    async fn get_instance(
        &self,
        request: GrpcRequest<admin::GetInstanceRequest>,
    ) -> Result<GrpcResponse<admin::Instance>, Status> {
        let at = names::instance(&request.get_ref().name).map_err(status)?;
        Ok(GrpcResponse::new(instance_pb(&at)))
    }

    async fn list_instances(
        &self,
        request: GrpcRequest<admin::ListInstancesRequest>,
    ) -> Result<GrpcResponse<admin::ListInstancesResponse>, Status> {
        let project = names::project(&request.get_ref().parent).map_err(status)?;
        let at = Instance {
            project,
            instance: LISTED_INSTANCE.to_string(),
        };
        Ok(GrpcResponse::new(admin::ListInstancesResponse {
            instances: vec![instance_pb(&at)],
            ..Default::default()
        }))
    }

    async fn update_instance(
        &self,
        _: GrpcRequest<admin::Instance>,
    ) -> Result<GrpcResponse<admin::Instance>, Status> {
        Err(denied("bigtable.instances.update"))
    }

    async fn partial_update_instance(
        &self,
        _: GrpcRequest<admin::PartialUpdateInstanceRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.instances.update"))
    }

    async fn delete_instance(
        &self,
        _: GrpcRequest<admin::DeleteInstanceRequest>,
    ) -> Result<GrpcResponse<()>, Status> {
        Err(denied("bigtable.instances.delete"))
    }

    async fn create_cluster(
        &self,
        _: GrpcRequest<admin::CreateClusterRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.clusters.create"))
    }

    async fn get_cluster(
        &self,
        request: GrpcRequest<admin::GetClusterRequest>,
    ) -> Result<GrpcResponse<admin::Cluster>, Status> {
        let name = &request.get_ref().name;
        let (at, id) = names::instance_child(name, "clusters").map_err(status)?;
        if id != cluster_id(&at.instance) {
            return Err(not_found("cluster", name));
        }
        Ok(GrpcResponse::new(cluster_pb(&at)))
    }

    async fn list_clusters(
        &self,
        request: GrpcRequest<admin::ListClustersRequest>,
    ) -> Result<GrpcResponse<admin::ListClustersResponse>, Status> {
        let at = list_parent(&request.get_ref().parent)?;
        Ok(GrpcResponse::new(admin::ListClustersResponse {
            clusters: vec![cluster_pb(&at)],
            ..Default::default()
        }))
    }

    async fn update_cluster(
        &self,
        _: GrpcRequest<admin::Cluster>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.clusters.update"))
    }

    async fn partial_update_cluster(
        &self,
        _: GrpcRequest<admin::PartialUpdateClusterRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.clusters.update"))
    }

    async fn delete_cluster(
        &self,
        _: GrpcRequest<admin::DeleteClusterRequest>,
    ) -> Result<GrpcResponse<()>, Status> {
        Err(denied("bigtable.clusters.delete"))
    }

    async fn create_app_profile(
        &self,
        _: GrpcRequest<admin::CreateAppProfileRequest>,
    ) -> Result<GrpcResponse<admin::AppProfile>, Status> {
        Err(denied("bigtable.appProfiles.create"))
    }

    async fn get_app_profile(
        &self,
        request: GrpcRequest<admin::GetAppProfileRequest>,
    ) -> Result<GrpcResponse<admin::AppProfile>, Status> {
        let name = &request.get_ref().name;
        let (at, id) = names::instance_child(name, "appProfiles").map_err(status)?;
        if id != DEFAULT_APP_PROFILE {
            return Err(not_found("app profile", name));
        }
        Ok(GrpcResponse::new(app_profile_pb(&at)))
    }

    async fn list_app_profiles(
        &self,
        request: GrpcRequest<admin::ListAppProfilesRequest>,
    ) -> Result<GrpcResponse<admin::ListAppProfilesResponse>, Status> {
        let at = list_parent(&request.get_ref().parent)?;
        Ok(GrpcResponse::new(admin::ListAppProfilesResponse {
            app_profiles: vec![app_profile_pb(&at)],
            ..Default::default()
        }))
    }

    async fn update_app_profile(
        &self,
        _: GrpcRequest<admin::UpdateAppProfileRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.appProfiles.update"))
    }

    async fn delete_app_profile(
        &self,
        _: GrpcRequest<admin::DeleteAppProfileRequest>,
    ) -> Result<GrpcResponse<()>, Status> {
        Err(denied("bigtable.appProfiles.delete"))
    }

    async fn get_iam_policy(
        &self,
        request: GrpcRequest<iam::GetIamPolicyRequest>,
    ) -> Result<GrpcResponse<iam::Policy>, Status> {
        Err(iam_denied(&request.get_ref().resource, "getIamPolicy"))
    }

    async fn set_iam_policy(
        &self,
        request: GrpcRequest<iam::SetIamPolicyRequest>,
    ) -> Result<GrpcResponse<iam::Policy>, Status> {
        Err(iam_denied(&request.get_ref().resource, "setIamPolicy"))
    }

    async fn test_iam_permissions(
        &self,
        request: GrpcRequest<iam::TestIamPermissionsRequest>,
    ) -> Result<GrpcResponse<iam::TestIamPermissionsResponse>, Status> {
        Ok(GrpcResponse::new(granted(request.into_inner())))
    }

    async fn list_hot_tablets(
        &self,
        request: GrpcRequest<admin::ListHotTabletsRequest>,
    ) -> Result<GrpcResponse<admin::ListHotTabletsResponse>, Status> {
        // No tablet of a local store is hot.
        let name = &request.get_ref().parent;
        let (at, id) = names::instance_child(name, "clusters").map_err(status)?;
        if id != cluster_id(&at.instance) {
            return Err(not_found("cluster", name));
        }
        Ok(GrpcResponse::new(admin::ListHotTabletsResponse::default()))
    }

    async fn create_logical_view(
        &self,
        _: GrpcRequest<admin::CreateLogicalViewRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.logicalViews.create"))
    }

    async fn get_logical_view(
        &self,
        request: GrpcRequest<admin::GetLogicalViewRequest>,
    ) -> Result<GrpcResponse<admin::LogicalView>, Status> {
        let name = &request.get_ref().name;
        names::instance_child(name, "logicalViews").map_err(status)?;
        Err(not_found("logical view", name))
    }

    async fn list_logical_views(
        &self,
        request: GrpcRequest<admin::ListLogicalViewsRequest>,
    ) -> Result<GrpcResponse<admin::ListLogicalViewsResponse>, Status> {
        list_parent(&request.get_ref().parent)?;
        Ok(GrpcResponse::new(admin::ListLogicalViewsResponse::default()))
    }

    async fn update_logical_view(
        &self,
        _: GrpcRequest<admin::UpdateLogicalViewRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.logicalViews.update"))
    }

    async fn delete_logical_view(
        &self,
        _: GrpcRequest<admin::DeleteLogicalViewRequest>,
    ) -> Result<GrpcResponse<()>, Status> {
        Err(denied("bigtable.logicalViews.delete"))
    }

    async fn create_materialized_view(
        &self,
        _: GrpcRequest<admin::CreateMaterializedViewRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.materializedViews.create"))
    }

    async fn get_materialized_view(
        &self,
        request: GrpcRequest<admin::GetMaterializedViewRequest>,
    ) -> Result<GrpcResponse<admin::MaterializedView>, Status> {
        let name = &request.get_ref().name;
        names::instance_child(name, "materializedViews").map_err(status)?;
        Err(not_found("materialized view", name))
    }

    async fn list_materialized_views(
        &self,
        request: GrpcRequest<admin::ListMaterializedViewsRequest>,
    ) -> Result<GrpcResponse<admin::ListMaterializedViewsResponse>, Status> {
        list_parent(&request.get_ref().parent)?;
        Ok(GrpcResponse::new(
            admin::ListMaterializedViewsResponse::default(),
        ))
    }

    async fn update_materialized_view(
        &self,
        _: GrpcRequest<admin::UpdateMaterializedViewRequest>,
    ) -> Result<GrpcResponse<Operation>, Status> {
        Err(denied("bigtable.materializedViews.update"))
    }

    async fn delete_materialized_view(
        &self,
        _: GrpcRequest<admin::DeleteMaterializedViewRequest>,
    ) -> Result<GrpcResponse<()>, Status> {
        Err(denied("bigtable.materializedViews.delete"))
    }
}
