//! Serialises a request body with provider options deep-merged into it, in
//! one pass over the body.
//!
//! Invariants:
//! - The output is the JSON of [`merge`]`(to_value(body), options)`: the same
//!   keys and values. A key the body has keeps its place; a key only the
//!   options have comes after the body's own, in the options' order.
//! - Only a top-level field that an option *object* merges into is built as a
//!   `Value`; every other field (the history above all) is written straight
//!   to the output, so the extra cost does not grow with the history.
//! - A body must serialise as a JSON object (a struct or a map); anything else
//!   is an error, never silently dropped options.

use serde::Serialize;
use serde::ser::{Error as _, Impossible, SerializeMap, SerializeStruct, Serializer};
use serde_json::{Map, Value};

/// `body` as JSON bytes, with `options` deep-merged into it.
pub(super) fn to_vec<T: Serialize + ?Sized>(
    body: &T,
    options: &Map<String, Value>,
) -> serde_json::Result<Vec<u8>> {
    // serde_json::to_vec starts with the same capacity.
    let mut out = Vec::with_capacity(128);
    body.serialize(TopLevel {
        inner: &mut serde_json::Serializer::new(&mut out),
        options,
    })?;
    Ok(out)
}

/// Deep-merges `patch` into `target`: an object merges into an object key by
/// key, recursively; anything else replaces the target.
pub(super) fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                match target.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        target.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

fn not_an_object<E: serde::ser::Error>() -> E {
    E::custom("a request body must serialise as a JSON object to take provider options")
}

/// A serializer that takes only the body's top level (a struct or a map) and
/// hands its fields to [`Fields`].
struct TopLevel<'o, S> {
    inner: S,
    options: &'o Map<String, Value>,
}

/// Serializer methods for values that are not objects: all refused.
macro_rules! refuse {
    ($($method:ident($($arg:ty),*) -> $ok:ty;)*) => {
        $(
            fn $method(self, $(_: $arg),*) -> Result<$ok, Self::Error> {
                Err(not_an_object())
            }
        )*
    };
}

impl<'o, S: Serializer> Serializer for TopLevel<'o, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Impossible<S::Ok, S::Error>;
    type SerializeTuple = Impossible<S::Ok, S::Error>;
    type SerializeTupleStruct = Impossible<S::Ok, S::Error>;
    type SerializeTupleVariant = Impossible<S::Ok, S::Error>;
    type SerializeMap = Fields<'o, S::SerializeMap>;
    type SerializeStruct = Fields<'o, S::SerializeMap>;
    type SerializeStructVariant = Impossible<S::Ok, S::Error>;

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        // No length: the options may add keys. (serde_json would also close
        // the object at once on `Some(0)`.)
        Ok(Fields {
            map: self.inner.serialize_map(None)?,
            options: self.options,
            merged: Vec::new(),
            key: None,
        })
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        self.serialize_map(None)
    }

    // A wrapper around the body is transparent, as serde_json makes it.
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Self::Error> {
        value.serialize(self)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Self::Ok, Self::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<Self::Ok, Self::Error> {
        Err(not_an_object())
    }

    refuse! {
        serialize_bool(bool) -> Self::Ok;
        serialize_i8(i8) -> Self::Ok;
        serialize_i16(i16) -> Self::Ok;
        serialize_i32(i32) -> Self::Ok;
        serialize_i64(i64) -> Self::Ok;
        serialize_u8(u8) -> Self::Ok;
        serialize_u16(u16) -> Self::Ok;
        serialize_u32(u32) -> Self::Ok;
        serialize_u64(u64) -> Self::Ok;
        serialize_f32(f32) -> Self::Ok;
        serialize_f64(f64) -> Self::Ok;
        serialize_char(char) -> Self::Ok;
        serialize_str(&str) -> Self::Ok;
        serialize_bytes(&[u8]) -> Self::Ok;
        serialize_none() -> Self::Ok;
        serialize_unit() -> Self::Ok;
        serialize_unit_struct(&'static str) -> Self::Ok;
        serialize_unit_variant(&'static str, u32, &'static str) -> Self::Ok;
        serialize_seq(Option<usize>) -> Self::SerializeSeq;
        serialize_tuple(usize) -> Self::SerializeTuple;
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct;
        serialize_tuple_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeTupleVariant;
        serialize_struct_variant(&'static str, u32, &'static str, usize)
            -> Self::SerializeStructVariant;
    }
}

/// The body's top-level fields on their way out, each merged with the option
/// of the same key, if any.
struct Fields<'o, M> {
    map: M,
    options: &'o Map<String, Value>,
    /// Option keys already merged into a field of the body.
    merged: Vec<&'o str>,
    /// A map key waiting for its value.
    key: Option<String>,
}

impl<M: SerializeMap> Fields<'_, M> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), M::Error> {
        let Some((name, patch)) = self.options.get_key_value(key) else {
            return self.map.serialize_entry(key, value);
        };
        self.merged.push(name);
        if patch.is_object() {
            let mut merged = serde_json::to_value(value).map_err(M::Error::custom)?;
            merge(&mut merged, patch);
            self.map.serialize_entry(key, &merged)
        } else {
            self.map.serialize_entry(key, patch)
        }
    }

    fn finish(mut self) -> Result<M::Ok, M::Error> {
        for (key, value) in self.options {
            if !self.merged.contains(&key.as_str()) {
                self.map.serialize_entry(key, value)?;
            }
        }
        self.map.end()
    }
}

impl<M: SerializeMap> SerializeStruct for Fields<'_, M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        self.finish()
    }
}

impl<M: SerializeMap> SerializeMap for Fields<'_, M> {
    type Ok = M::Ok;
    type Error = M::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        match serde_json::to_value(key).map_err(M::Error::custom)? {
            Value::String(key) => {
                self.key = Some(key);
                Ok(())
            }
            _ => Err(M::Error::custom("a request body's keys must be strings")),
        }
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| M::Error::custom("a map value came without its key"))?;
        self.field(&key, value)
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        self.finish()
    }
}

#[cfg(test)]
mod tests;
