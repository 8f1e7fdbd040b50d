//! The simulated Redis's scripting: the registry's own Lua scripts run in Lua 5.1 (the
//! version Redis embeds), with `KEYS`, `ARGV` and `redis.call`, and Redis's conversions
//! between its replies and Lua values.
//!
//! Redis to Lua: an integer is a number, a bulk string a string, a nil reply `false`, an
//! array a table, a status reply a table `{ok = text}`; an error reply raises a Lua error
//! (what `redis.call` does). Lua to Redis: a number is an integer (truncated), a string a
//! bulk string, `true` the integer 1, `false` and `nil` a nil reply, a table with `err` an
//! error, with `ok` a status, any other table an array up to its first nil.

use mlua::{Lua, MultiValue, Value as LuaValue};
use snowdrift_store::worker::sim::Value;

use crate::redis::{CommandError, Exec};

/// Runs `script` with `keys` and `args` against `exec`: its reply, or the error Redis
/// would answer.
pub fn run(
    script: &str,
    keys: &[String],
    args: &[String],
    exec: &mut Exec<'_>,
) -> Result<Value, CommandError> {
    let lua = Lua::new();
    let failed = |e: mlua::Error| format!("ERR Error running script: {e}");
    let strings = |items: &[String]| -> mlua::Result<mlua::Table> {
        let t = lua.create_table()?;
        for (i, s) in items.iter().enumerate() {
            t.raw_set(i + 1, lua.create_string(s)?)?;
        }
        Ok(t)
    };
    let globals = lua.globals();
    let setup = strings(keys)
        .and_then(|k| globals.set("KEYS", k))
        .and_then(|()| strings(args))
        .and_then(|a| globals.set("ARGV", a));
    setup.map_err(failed)?;
    lua.scope(|scope| {
        let call = scope.create_function_mut(|lua, args: MultiValue| {
            let mut command = Vec::with_capacity(args.len());
            for a in args {
                match &a {
                    LuaValue::String(s) => command.push(s.as_bytes().to_vec()),
                    LuaValue::Integer(_) | LuaValue::Number(_) => {
                        let s = lua.coerce_string(a.clone())?.ok_or_else(|| {
                            mlua::Error::runtime("a number Lua cannot write as a string")
                        })?;
                        command.push(s.as_bytes().to_vec());
                    }
                    _ => {
                        return Err(mlua::Error::runtime(
                            "Lua redis lib command arguments must be strings or integers",
                        ));
                    }
                }
            }
            let reply = exec.call(&command).map_err(mlua::Error::runtime)?;
            to_lua(lua, &reply)
        })?;
        let redis = lua.create_table()?;
        redis.set("call", call)?;
        lua.globals().set("redis", redis)?;
        let reply: LuaValue = lua.load(script).set_name("@user_script").eval()?;
        from_lua(&reply)
    })
    .map_err(failed)?
}

fn to_lua(lua: &Lua, reply: &Value) -> mlua::Result<LuaValue> {
    Ok(match reply {
        Value::Nil => LuaValue::Boolean(false),
        Value::Int(i) => LuaValue::Number(*i as f64),
        Value::BulkString(b) => LuaValue::String(lua.create_string(b)?),
        Value::Array(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, to_lua(lua, item)?)?;
            }
            LuaValue::Table(t)
        }
        Value::Okay => {
            let t = lua.create_table()?;
            t.set("ok", "OK")?;
            LuaValue::Table(t)
        }
        Value::SimpleString(s) => {
            let t = lua.create_table()?;
            t.set("ok", s.as_str())?;
            LuaValue::Table(t)
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "the simulated Redis has no Lua form for {other:?}"
            )));
        }
    })
}

fn from_lua(value: &LuaValue) -> mlua::Result<Result<Value, CommandError>> {
    Ok(Ok(match value {
        LuaValue::Nil | LuaValue::Boolean(false) => Value::Nil,
        LuaValue::Boolean(true) => Value::Int(1),
        // Truncated toward zero, as Redis converts a Lua number.
        LuaValue::Integer(i) => Value::Int(*i),
        LuaValue::Number(n) => Value::Int(n.trunc() as i64),
        LuaValue::String(s) => Value::BulkString(s.as_bytes().to_vec()),
        LuaValue::Table(t) => {
            if let LuaValue::String(e) = t.raw_get::<LuaValue>("err")? {
                return Ok(Err(e.to_string_lossy()));
            }
            if let LuaValue::String(ok) = t.raw_get::<LuaValue>("ok")? {
                return Ok(Ok(Value::SimpleString(ok.to_string_lossy())));
            }
            let mut items = Vec::new();
            for i in 1.. {
                let item: LuaValue = t.raw_get(i)?;
                if item.is_nil() {
                    break;
                }
                match from_lua(&item)? {
                    Ok(v) => items.push(v),
                    Err(e) => return Ok(Err(e)),
                }
            }
            Value::Array(items)
        }
        other => {
            return Err(mlua::Error::runtime(format!(
                "a script answered a {} Redis has no reply for",
                other.type_name()
            )));
        }
    }))
}
