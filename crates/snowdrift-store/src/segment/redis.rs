//! Segment tags in Redis: a hash per tag, claimed with `HINCRBY` inside a Lua script.

use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Script};
use snowdrift_core::segment::IdRange;

use super::floor::{TagChange, TagFloor};
use super::tag::{Claim, NewTag, Tag, TagUpdate, validate_claim, validate_table, validate_tag};
use crate::error::{Error, Result};

/// Creates the hash and registers the tag, unless the tag exists.
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'max_id', 1, 'step', ARGV[1], 'update_time', redis.call('TIME')[1])
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'description', ARGV[3]) end
redis.call('SADD', KEYS[2], ARGV[4])
return 1
";

/// Sets the fields given (an empty flag leaves a field alone) on an existing tag.
const UPDATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] ~= '' then redis.call('HSET', KEYS[1], 'step', ARGV[1]) end
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'description', ARGV[3]) end
redis.call('HSET', KEYS[1], 'update_time', redis.call('TIME')[1])
return 1
";

/// Moves `max_id` by the step (given, or the stored one). `HINCRBY` refuses to pass
/// i64::MAX without changing anything, which `pcall` turns into an "overflow" answer.
/// Numbers travel as strings: Lua's numbers are doubles and would round IDs above 2^53.
const CLAIM: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local step = ARGV[1]
if step == '' then step = redis.call('HGET', KEYS[1], 'step') end
local moved = redis.pcall('HINCRBY', KEYS[1], 'max_id', step)
if type(moved) == 'table' and moved.err then
  return {'overflow', redis.call('HGET', KEYS[1], 'max_id'), step}
end
redis.call('HSET', KEYS[1], 'update_time', redis.call('TIME')[1])
return {'ok', redis.call('HGET', KEYS[1], 'max_id'), step, redis.call('HGET', KEYS[1], 'step')}
";

/// Raises every tag of the call to its floor, in one script (so all at once): KEYS are the
/// tags' hashes then the index; ARGV holds per tag its name, floor, step and description
/// (with a flag). A `max_id` below the floor is set to it, one at or above is kept. Numbers
/// stay strings and are compared as digits: Lua's doubles would round IDs above 2^53.
const RAISE: &str = r"
local function below(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
local n = #KEYS - 1
local out = {}
for i = 1, n do
  local name, floor, step = ARGV[4*i-3], ARGV[4*i-2], ARGV[4*i-1]
  local max_id = redis.call('HGET', KEYS[i], 'max_id')
  if max_id == false then
    redis.call('HSET', KEYS[i], 'max_id', floor, 'step', step, 'update_time', redis.call('TIME')[1])
    local d = ARGV[4*i]
    if string.sub(d, 1, 1) == '1' then redis.call('HSET', KEYS[i], 'description', string.sub(d, 2)) end
    redis.call('SADD', KEYS[n+1], name)
    table.insert(out, {'', '', floor, step})
  else
    local old_step = redis.call('HGET', KEYS[i], 'step') or ''
    local after = max_id
    if below(max_id, floor) then after = floor end
    if after ~= max_id or old_step ~= step then
      redis.call('HSET', KEYS[i], 'max_id', after, 'step', step, 'update_time', redis.call('TIME')[1])
    end
    table.insert(out, {max_id, old_step, after, step})
  end
end
return out
";

/// Segments and tags in Redis.
///
/// Tag `T` is the hash `{prefix}:tag:T` with the fields `max_id`, `step`, `description`
/// and `update_time` (Leaf's columns); the set `{prefix}:tags` lists the tags. A claim is
/// one Lua script, so it is atomic: two nodes racing on a tag never get overlapping ranges.
///
/// Durability is Redis's: a claim is acknowledged once Redis has applied it, which survives
/// a Redis restart only with an append-only file (`appendonly yes`, ideally
/// `appendfsync always`). Without it, a Redis restart loses claims and IDs repeat; use a
/// SQL store or ZooKeeper where that matters.
#[derive(Clone)]
pub struct RedisSegmentStore {
    conn: ConnectionManager,
    prefix: String,
}

impl std::fmt::Debug for RedisSegmentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSegmentStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisSegmentStore {
    /// Connects to `redis://HOST[:PORT][/DB]`; `prefix` names the keys (see the type's docs).
    /// The connection reconnects by itself; each command gives up after 5 s.
    pub async fn connect(url: &str, prefix: &str) -> Result<Self> {
        validate_table(prefix)?;
        let conn = crate::redis_connection::connect(url).await?;
        Ok(Self {
            conn,
            prefix: prefix.to_string(),
        })
    }

    fn key(&self, tag: &str) -> String {
        format!("{}:tag:{tag}", self.prefix)
    }

    fn index(&self) -> String {
        format!("{}:tags", self.prefix)
    }

    /// Creates a tag whose first segment starts at 1 (as Leaf's do).
    pub async fn create_tag(&self, new: &NewTag) -> Result<Tag> {
        new.validate()?;
        let (has_description, description) = flag(new.description.as_deref());
        let created: i64 = Script::new(CREATE)
            .key(self.key(&new.tag))
            .key(self.index())
            .arg(new.step)
            .arg(has_description)
            .arg(description)
            .arg(&new.tag)
            .invoke_async(&mut self.conn.clone())
            .await?;
        if created == 0 {
            return Err(Error::TagExists(new.tag.clone()));
        }
        Ok(Tag {
            tag: new.tag.clone(),
            max_id: 1,
            step: new.step,
            description: new.description.clone(),
            template: None,
            period: 0,
        })
    }

    /// All tags, by name.
    pub async fn list_tags(&self) -> Result<Vec<Tag>> {
        let mut conn = self.conn.clone();
        let mut names: Vec<String> = conn.smembers(self.index()).await?;
        if names.is_empty() {
            // Redis refuses an empty pipeline.
            return Ok(Vec::new());
        }
        names.sort();
        let mut pipe = redis::pipe();
        for name in &names {
            pipe.hmget(self.key(name), &["max_id", "step", "description"]);
        }
        let rows: Vec<Fields> = pipe.query_async(&mut conn).await?;
        names
            .into_iter()
            .zip(rows)
            // A name whose hash is gone (deleted by hand) is not a tag.
            .filter(|(_, fields)| fields.0.is_some())
            .map(|(name, fields)| tag_of(name, fields))
            .collect()
    }

    /// One tag.
    pub async fn get_tag(&self, tag: &str) -> Result<Tag> {
        validate_tag(tag)?;
        let fields: Fields = self
            .conn
            .clone()
            .hmget(self.key(tag), &["max_id", "step", "description"])
            .await?;
        if fields.0.is_none() {
            return Err(Error::TagNotFound(tag.to_string()));
        }
        tag_of(tag.to_string(), fields)
    }

    /// Changes a tag's step and/or description.
    pub async fn update_tag(&self, tag: &str, update: &TagUpdate) -> Result<Tag> {
        validate_tag(tag)?;
        update.validate()?;
        let (has_description, description) = flag(update.description.as_deref());
        let updated: i64 = Script::new(UPDATE)
            .key(self.key(tag))
            .arg(update.step.map(|s| s.to_string()).unwrap_or_default())
            .arg(has_description)
            .arg(description)
            .invoke_async(&mut self.conn.clone())
            .await?;
        if updated == 0 {
            return Err(Error::TagNotFound(tag.to_string()));
        }
        self.get_tag(tag).await
    }

    /// Claims the next segment of `tag`: `step` IDs, or the tag's stored step when `None`.
    /// Redis has applied the new `max_id` when this returns (see the type's docs on
    /// durability).
    pub async fn claim(&self, tag: &str, step: Option<i64>) -> Result<Claim> {
        validate_claim(tag, step)?;
        let answer: Vec<String> = Script::new(CLAIM)
            .key(self.key(tag))
            .arg(step.map(|s| s.to_string()).unwrap_or_default())
            .invoke_async(&mut self.conn.clone())
            .await?;
        let number = |i: usize, what: &str| -> Result<i64> {
            answer
                .get(i)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| corrupt(tag, what))
        };
        match answer.first().map(String::as_str) {
            Some("ok") => {
                let (end, used) = (number(1, "max_id")?, number(2, "step")?);
                let start = end
                    .checked_sub(used)
                    .filter(|s| *s >= 0)
                    .ok_or_else(|| corrupt(tag, "max_id"))?;
                Ok(Claim {
                    ids: IdRange::new(start as u64, end as u64),
                    step: used,
                    stored_step: number(3, "step")?,
                })
            }
            Some("overflow") => Err(Error::Overflow {
                tag: tag.to_string(),
                max_id: number(1, "max_id")?,
                step: number(2, "step")?,
            }),
            Some("missing") => Err(Error::TagNotFound(tag.to_string())),
            _ => Err(corrupt(tag, "claim answer")),
        }
    }
}

impl RedisSegmentStore {
    /// Raises every tag of `floors` to its floor (see [`TagFloor`]) in one Lua script, so
    /// all of them change at once; never lowers a `max_id`.
    pub async fn raise_to(&self, floors: &[TagFloor]) -> Result<Vec<TagChange>> {
        for floor in floors {
            floor.validate()?;
        }
        if floors.is_empty() {
            return Ok(Vec::new());
        }
        let raise = Script::new(RAISE);
        let mut script = raise.prepare_invoke();
        for floor in floors {
            script.key(self.key(&floor.tag));
        }
        script.key(self.index());
        for floor in floors {
            let (has, text) = flag(floor.description.as_deref());
            script
                .arg(&floor.tag)
                .arg(floor.next_id.to_string())
                .arg(floor.step.to_string())
                .arg(format!("{has}{text}"));
        }
        let answer: Vec<Vec<String>> = script.invoke_async(&mut self.conn.clone()).await?;
        floors
            .iter()
            .zip(answer)
            .map(|(floor, row)| {
                let tag = &floor.tag;
                let number = |i: usize, what: &str| -> Result<i64> {
                    row.get(i)
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| corrupt(tag, what))
                };
                let before = match row.first().map(String::as_str) {
                    Some("") => None,
                    _ => Some((number(0, "max_id")?, number(1, "step")?)),
                };
                Ok(TagChange {
                    tag: tag.clone(),
                    before,
                    after: (number(2, "max_id")?, number(3, "step")?),
                })
            })
            .collect()
    }
}

/// `max_id`, `step`, `description` as Redis returns them.
type Fields = (Option<String>, Option<String>, Option<String>);

fn tag_of(tag: String, (max_id, step, description): Fields) -> Result<Tag> {
    let parse = |v: Option<String>, what: &str| {
        v.and_then(|v| v.parse().ok())
            .ok_or_else(|| corrupt(&tag, what))
    };
    Ok(Tag {
        max_id: parse(max_id, "max_id")?,
        step: parse(step, "step")?,
        description,
        tag,
        template: None,
        period: 0,
    })
}

/// A description as two script arguments: whether it is given, and its text.
fn flag(description: Option<&str>) -> (&'static str, &str) {
    match description {
        Some(d) => ("1", d),
        None => ("0", ""),
    }
}

fn corrupt(tag: &str, what: &str) -> Error {
    Error::InvalidInput(format!(
        "tag {tag:?} holds no valid {what} in Redis: the hash was edited by hand; fix or recreate it"
    ))
}
