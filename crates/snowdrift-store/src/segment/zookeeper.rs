//! Segment tags in ZooKeeper: a znode per tag, claimed with a versioned `setData`.

use serde::{Deserialize, Serialize};
use snowdrift_core::segment::IdRange;
use zookeeper_client as zk;

use super::floor::{TagChange, TagFloor};
use super::tag::{Claim, NewTag, Tag, TagUpdate, validate_claim, validate_table, validate_tag};
use crate::error::{Error, Result};
use crate::zk_connection::{Session, Target};

/// How often a claim or update retries after another node changed the znode first.
const MAX_RACES: usize = 64;

/// What a tag's znode holds (JSON), Leaf's columns.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Stored {
    max_id: i64,
    step: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

/// Segments and tags in ZooKeeper.
///
/// Tag `T` is the persistent znode `/{root}/T` holding `{"max_id": …, "step": …,
/// "description": …}`. A claim reads the znode and writes the moved `max_id` back with
/// `setData` at the version it read; if another node wrote first, ZooKeeper refuses the
/// write (`BadVersion`) and the claim starts over from a fresh read. Two nodes can never
/// both move `max_id` from the same value, so their ranges never overlap, and a write
/// ZooKeeper acknowledged is on a quorum's disks.
#[derive(Debug, Clone)]
pub struct ZkSegmentStore {
    // One session, replaced when ZooKeeper expires it.
    session: Session,
    root: String,
}

impl ZkSegmentStore {
    /// Connects to `zookeeper://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]` and creates the
    /// znode `/root` if it is missing. With a user, every znode gets the ACL "this user
    /// writes, anyone reads", and `/root` and its tags found writable by anyone get it too.
    pub async fn connect(url: &str, root: &str) -> Result<Self> {
        validate_table(root)?;
        let store = Self {
            session: Session::new(Target::parse(url)?),
            root: format!("/{root}"),
        };
        let client = store.session.client().await?;
        let target = store.session.target();
        match client.create(&store.root, b"", &target.persistent()).await {
            Ok(_) | Err(zk::Error::NodeExists) => {}
            Err(e) => return Err(store.session.failed_on(&store.root, e).await),
        }
        target.secure_tree(&client, &store.root).await?;
        Ok(store)
    }

    /// Opens the store at `url` under `/root` as [`connect`](Self::connect) does, creating
    /// nothing and securing nothing: `None` when `/root` does not exist (no tag was ever
    /// made there). For previews that must leave ZooKeeper as it was.
    pub async fn open_existing(url: &str, root: &str) -> Result<Option<Self>> {
        validate_table(root)?;
        let store = Self {
            session: Session::new(Target::parse(url)?),
            root: format!("/{root}"),
        };
        let client = store.session.client().await?;
        match client.check_stat(&store.root).await {
            Ok(Some(_)) => Ok(Some(store)),
            Ok(None) => Ok(None),
            Err(e) => Err(store.session.failed_on(&store.root, e).await),
        }
    }

    fn path(&self, tag: &str) -> String {
        format!("{}/{tag}", self.root)
    }

    /// The tag's data and the version it was read at.
    async fn read(&self, client: &zk::Client, tag: &str) -> Result<(Stored, i32)> {
        match client.get_data(&self.path(tag)).await {
            Ok((data, stat)) => {
                let stored = serde_json::from_slice(&data).map_err(|e| {
                    Error::InvalidInput(format!(
                        "znode {} does not hold a tag ({e}): it was edited by hand; fix or recreate it",
                        self.path(tag)
                    ))
                })?;
                Ok((stored, stat.version))
            }
            Err(zk::Error::NoNode) => Err(Error::TagNotFound(tag.to_string())),
            Err(e) => Err(self.session.failed(e).await),
        }
    }

    /// Reads the tag, lets `change` compute its new data, and writes that back at the
    /// version read, starting over when another node wrote in between.
    async fn compare_and_set<T>(
        &self,
        tag: &str,
        mut change: impl FnMut(&Stored) -> Result<(Stored, T)>,
    ) -> Result<T> {
        let client = self.session.client().await?;
        for _ in 0..MAX_RACES {
            let (stored, version) = self.read(&client, tag).await?;
            let (next, out) = change(&stored)?;
            let data = serde_json::to_vec(&next).map_err(|e| Error::InvalidInput(e.to_string()))?;
            match client.set_data(&self.path(tag), &data, Some(version)).await {
                Ok(_) => return Ok(out),
                Err(zk::Error::BadVersion) => continue,
                Err(zk::Error::NoNode) => return Err(Error::TagNotFound(tag.to_string())),
                Err(e) => return Err(self.session.failed_on(&self.path(tag), e).await),
            }
        }
        Err(Error::Unavailable(
            format!("tag {tag:?}: {MAX_RACES} writes in a row lost the race to other nodes").into(),
        ))
    }

    /// Creates a tag whose first segment starts at 1 (as Leaf's do).
    pub async fn create_tag(&self, new: &NewTag) -> Result<Tag> {
        new.validate()?;
        let stored = Stored {
            max_id: 1,
            step: new.step,
            description: new.description.clone(),
        };
        let data = serde_json::to_vec(&stored).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let client = self.session.client().await?;
        let target = self.session.target();
        // An empty root can be deleted and planted again open by anyone its parent lets
        // (/ by default); a tag created under it could then be replaced.
        target.secure(&client, &self.root).await?;
        match client
            .create(&self.path(&new.tag), &data, &target.persistent())
            .await
        {
            Ok(_) => Ok(tag_of(&new.tag, stored)),
            Err(zk::Error::NodeExists) => Err(Error::TagExists(new.tag.clone())),
            Err(e) => Err(self.session.failed_on(&self.path(&new.tag), e).await),
        }
    }

    /// All tags, by name.
    pub async fn list_tags(&self) -> Result<Vec<Tag>> {
        let client = self.session.client().await?;
        let mut names = match client.list_children(&self.root).await {
            Ok(names) => names,
            Err(e) => return Err(self.session.failed(e).await),
        };
        names.sort();
        let mut tags = Vec::with_capacity(names.len());
        for name in names {
            match self.read(&client, &name).await {
                Ok((stored, _)) => tags.push(tag_of(&name, stored)),
                // Deleted between the listing and the read.
                Err(Error::TagNotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(tags)
    }

    /// One tag.
    pub async fn get_tag(&self, tag: &str) -> Result<Tag> {
        validate_tag(tag)?;
        let client = self.session.client().await?;
        let (stored, _) = self.read(&client, tag).await?;
        Ok(tag_of(tag, stored))
    }

    /// Changes a tag's step and/or description.
    pub async fn update_tag(&self, tag: &str, update: &TagUpdate) -> Result<Tag> {
        validate_tag(tag)?;
        update.validate()?;
        self.compare_and_set(tag, |stored| {
            let next = Stored {
                max_id: stored.max_id,
                step: update.step.unwrap_or(stored.step),
                description: update
                    .description
                    .clone()
                    .or_else(|| stored.description.clone()),
            };
            Ok((next.clone(), tag_of(tag, next)))
        })
        .await
    }

    /// Claims the next segment of `tag`: `step` IDs, or the tag's stored step when `None`.
    /// ZooKeeper has the new `max_id` on a quorum when this returns.
    pub async fn claim(&self, tag: &str, step: Option<i64>) -> Result<Claim> {
        validate_claim(tag, step)?;
        self.compare_and_set(tag, |stored| {
            let used = step.unwrap_or(stored.step);
            let end = stored
                .max_id
                .checked_add(used)
                .ok_or_else(|| Error::Overflow {
                    tag: tag.to_string(),
                    max_id: stored.max_id,
                    step: used,
                })?;
            if stored.max_id < 0 || used <= 0 {
                return Err(Error::InvalidInput(format!(
                    "znode of tag {tag:?} holds max_id {} and step {used}: it was edited by hand; fix it",
                    stored.max_id
                )));
            }
            let claim = Claim {
                ids: IdRange::new(stored.max_id as u64, end as u64),
                step: used,
                stored_step: stored.step,
            };
            let next = Stored {
                max_id: end,
                step: stored.step,
                description: stored.description.clone(),
            };
            Ok((next, claim))
        })
        .await
    }
}

impl ZkSegmentStore {
    /// Raises every tag of `floors` to its floor (see [`TagFloor`]), tag by tag, each with a
    /// versioned write (a missing tag is created); never lowers a `max_id`. Every floor is
    /// checked before the first write, and a tag in ZooKeeper has no template, so nothing
    /// is refused halfway.
    pub async fn raise_to(&self, floors: &[TagFloor]) -> Result<Vec<TagChange>> {
        for floor in floors {
            floor.validate()?;
        }
        let mut changes = Vec::with_capacity(floors.len());
        for floor in floors {
            changes.push(self.raise_one(floor).await?);
        }
        Ok(changes)
    }

    async fn raise_one(&self, floor: &TagFloor) -> Result<TagChange> {
        let client = self.session.client().await?;
        let target = self.session.target();
        for _ in 0..MAX_RACES {
            match self.read(&client, &floor.tag).await {
                Ok((stored, _)) => {
                    let change = floor.against(Some(&tag_of(&floor.tag, stored)))?;
                    if !change.changes() {
                        return Ok(change);
                    }
                }
                Err(Error::TagNotFound(_)) => {
                    // Created at its floor, never at 1: a server serving every tag of the
                    // store could claim a first segment between a create and a raise.
                    let change = floor.against(None)?;
                    let stored = Stored {
                        max_id: change.after.0,
                        step: change.after.1,
                        description: floor.description.clone(),
                    };
                    let data = serde_json::to_vec(&stored)
                        .map_err(|e| Error::InvalidInput(e.to_string()))?;
                    target.secure(&client, &self.root).await?;
                    match client
                        .create(&self.path(&floor.tag), &data, &target.persistent())
                        .await
                    {
                        Ok(_) => return Ok(change),
                        Err(zk::Error::NodeExists) => continue,
                        Err(e) => {
                            return Err(self.session.failed_on(&self.path(&floor.tag), e).await);
                        }
                    }
                }
                Err(e) => return Err(e),
            }
            let raised = self
                .compare_and_set(&floor.tag, |stored| {
                    let change = floor.against(Some(&tag_of(&floor.tag, stored.clone())))?;
                    let next = Stored {
                        max_id: change.after.0,
                        step: change.after.1,
                        description: stored.description.clone(),
                    };
                    Ok((next, change))
                })
                .await;
            match raised {
                // Deleted between the read and the write: start over.
                Err(Error::TagNotFound(_)) => continue,
                other => return other,
            }
        }
        Err(Error::Unavailable(
            format!(
                "tag {:?}: {MAX_RACES} raises in a row lost the race to other nodes",
                floor.tag
            )
            .into(),
        ))
    }
}

fn tag_of(tag: &str, stored: Stored) -> Tag {
    Tag {
        tag: tag.to_string(),
        max_id: stored.max_id,
        step: stored.step,
        description: stored.description,
        template: None,
        period: 0,
    }
}
