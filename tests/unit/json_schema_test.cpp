// JSON Schema -> GBNF: each produced grammar parses, accepts documents valid under the
// schema and refuses invalid ones (followed with a GrammarMatcher); unsupported keywords,
// bad values and limits give errors naming the keyword and the JSON pointer.
#include "tessera/json_schema.h"

#include <gtest/gtest.h>

#include <string>

#include "tessera/grammar.h"

namespace tessera {
namespace {

std::string grammar_text(std::string_view schema) {
  Result<std::string> g = json_schema_to_grammar(schema);
  EXPECT_TRUE(g.is_ok()) << g.status().message() << "\nschema: " << schema;
  return g ? *g : std::string();
}

std::shared_ptr<const Grammar> compile(std::string_view schema) {
  const std::string text = grammar_text(schema);
  if (text.empty()) return nullptr;
  Result<std::shared_ptr<const Grammar>> g = Grammar::parse(text, "schema");
  EXPECT_TRUE(g.is_ok()) << g.status().message() << "\n" << text;
  return g ? *g : nullptr;
}

std::string error_of(std::string_view schema) {
  Result<std::string> g = json_schema_to_grammar(schema);
  return g.is_ok() ? std::string("(compiled)") : g.status().message();
}

/// True when `doc` is a complete sentence of the grammar.
bool accepts(const std::shared_ptr<const Grammar>& g, std::string_view doc) {
  if (!g) return false;
  GrammarMatcher m(g);
  return m.accept_text(doc) && m.can_end();
}

#define EXPECT_ACCEPTS(g, doc) EXPECT_TRUE(accepts(g, doc)) << "should accept: " << (doc)
#define EXPECT_REJECTS(g, doc) EXPECT_FALSE(accepts(g, doc)) << "should reject: " << (doc)

TEST(JsonSchema, PrimitiveTypes) {
  const auto str = compile(R"({"type": "string"})");
  EXPECT_ACCEPTS(str, R"("")");
  EXPECT_ACCEPTS(str, R"("abc")");
  EXPECT_ACCEPTS(str, R"("a\n\"\\\/\u00e9 é")");
  EXPECT_ACCEPTS(str, R"("\ud83d\ude00")");  // a surrogate pair
  EXPECT_REJECTS(str, R"("\ud800")");         // a lone surrogate
  EXPECT_REJECTS(str, "\"a\nb\"");            // a raw control character
  EXPECT_REJECTS(str, R"("\x")");
  EXPECT_REJECTS(str, "12");
  EXPECT_REJECTS(str, R"("abc)");

  const auto integer = compile(R"({"type": "integer"})");
  for (const char* ok : {"0", "-12", "1234567890123456", "-0"}) EXPECT_ACCEPTS(integer, ok);
  for (const char* bad : {"01", "1.5", "1e3", "\"1\"", "+1", "", "12345678901234567"})
    EXPECT_REJECTS(integer, bad);

  const auto number = compile(R"({"type": "number"})");
  for (const char* ok : {"0", "1.5", "-0.25e-3", "2E+10", "7"}) EXPECT_ACCEPTS(number, ok);
  for (const char* bad : {".5", "1.", "+1", "1e", "true", "0x1", "1e999"})
    EXPECT_REJECTS(number, bad);

  const auto boolean = compile(R"({"type": "boolean"})");
  EXPECT_ACCEPTS(boolean, "true");
  EXPECT_ACCEPTS(boolean, "false");
  EXPECT_REJECTS(boolean, "null");
  EXPECT_REJECTS(boolean, "1");

  const auto null = compile(R"({"type": "null"})");
  EXPECT_ACCEPTS(null, "null");
  EXPECT_REJECTS(null, "false");
}

TEST(JsonSchema, TypeListsAndAnyValue) {
  const auto g = compile(R"({"type": ["string", "null"]})");
  EXPECT_ACCEPTS(g, R"("x")");
  EXPECT_ACCEPTS(g, "null");
  EXPECT_REJECTS(g, "1");
  EXPECT_REJECTS(g, "{}");

  for (const char* any : {"{}", "true", R"({"description": "anything", "title": "t"})"}) {
    const auto v = compile(any);
    for (const char* doc : {"1", "null", R"("s")", "[1, [2, {}]]", R"({"a": {"b": [true]}})"})
      EXPECT_ACCEPTS(v, doc) << " schema " << any;
    EXPECT_REJECTS(v, "[1,]");
    EXPECT_REJECTS(v, "{\"a\"}");
  }
  EXPECT_EQ(error_of("false"), "json schema: (root): the schema 'false' matches no value");
}

TEST(JsonSchema, ConstraintsWithoutTypeApplyPerType) {
  // No `type`: every type is valid; minLength constrains the strings only.
  const auto g = compile(R"({"minLength": 2})");
  EXPECT_ACCEPTS(g, R"("ab")");
  EXPECT_REJECTS(g, R"("a")");
  EXPECT_ACCEPTS(g, "5");
  EXPECT_ACCEPTS(g, "[]");
}

constexpr const char* kPerson = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "age": {"type": "integer"},
    "email": {"type": "string"}
  },
  "required": ["name"],
  "additionalProperties": false
})";

TEST(JsonSchema, ObjectRequiredOptionalAndClosed) {
  const auto g = compile(kPerson);
  EXPECT_ACCEPTS(g, R"({"name":"Ann"})");
  EXPECT_ACCEPTS(g, R"({"name":"Ann","age":3})");
  EXPECT_ACCEPTS(g, R"({"name":"Ann","email":"a@b"})");
  EXPECT_ACCEPTS(g, R"({"name":"Ann","age":3,"email":"a@b"})");
  EXPECT_ACCEPTS(g, R"({ "name": "Ann", "age": 3 })");
  EXPECT_ACCEPTS(g, "{\n  \"name\": \"Ann\",\n  \"age\": 3\n}");
  EXPECT_REJECTS(g, "{}");                                  // missing required
  EXPECT_REJECTS(g, R"({"age":3})");                        // missing required
  EXPECT_REJECTS(g, R"({"name":"Ann","extra":1})");         // additionalProperties: false
  EXPECT_REJECTS(g, R"({"name":1})");                       // wrong type
  EXPECT_REJECTS(g, R"({"name":"Ann","age":"3"})");         // wrong type
  EXPECT_REJECTS(g, R"({"name":"Ann","age":3,"age":4})");   // duplicate
  EXPECT_REJECTS(g, R"({"name":"Ann",})");
  EXPECT_REJECTS(g, R"({"age":3,"name":"Ann"})");  // documented: members in schema order
  EXPECT_REJECTS(g, R"([])");
}

TEST(JsonSchema, ObjectWithOnlyOptionalProperties) {
  const auto g = compile(R"({"type": "object", "additionalProperties": false,
      "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}})");
  for (const char* ok : {"{}", R"({"a":1})", R"({"b":1})", R"({"c":1})", R"({"a":1,"c":2})",
                         R"({"b":1,"c":2})", R"({"a":1,"b":2,"c":3})", "{ }"})
    EXPECT_ACCEPTS(g, ok);
  for (const char* bad : {R"({,"a":1})", R"({"a":1,})", R"({"a":1,"a":1})", R"({"d":1})",
                          R"({"a":1 "b":2})"})
    EXPECT_REJECTS(g, bad);
}

TEST(JsonSchema, AdditionalPropertiesAllowedByDefault) {
  const auto g = compile(R"({"type": "object", "properties": {"name": {"type": "string"}},
                             "required": ["name"]})");
  EXPECT_ACCEPTS(g, R"({"name":"x"})");
  EXPECT_ACCEPTS(g, R"({"name":"x","zzz":[1,2]})");
  EXPECT_ACCEPTS(g, R"({"name":"x","nam":1,"names":2,"":3})");
  EXPECT_ACCEPTS(g, R"({"name":"x","a\"b\\c\n":1})");
  EXPECT_REJECTS(g, R"({"name":"x","name":"y"})");  // an extra key may not be a declared one
  EXPECT_REJECTS(g, R"({"zzz":1})");                 // still required

  const auto open = compile(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  EXPECT_ACCEPTS(open, R"({"zzz":1})");
  EXPECT_ACCEPTS(open, R"({"a":1,"b":"x"})");
  EXPECT_ACCEPTS(open, "{}");
  EXPECT_REJECTS(open, R"({"a":"x"})");
  EXPECT_REJECTS(open, R"({"zzz":1,"a":"x"})");

  const auto typed = compile(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  EXPECT_ACCEPTS(typed, R"({"x":1,"y":2})");
  EXPECT_ACCEPTS(typed, R"({"x\u00e9":1})");  // no declared keys: any string key
  EXPECT_REJECTS(typed, R"({"x":"s"})");
}

TEST(JsonSchema, ExtraKeysDifferFromDeclaredOnesWithEscapes) {
  const auto g = compile(R"({"type": "object", "properties": {"a\nb": {"type": "null"}, "é": {"type": "null"}}})");
  EXPECT_ACCEPTS(g, R"({"a\nb":null})");
  EXPECT_ACCEPTS(g, R"({"é":null})");
  EXPECT_ACCEPTS(g, R"({"a\tb":1,"è":1,"éé":1,"a\n":1})");
  EXPECT_REJECTS(g, R"({"a\nb":1})");
  EXPECT_REJECTS(g, R"({"é":1})");
}

TEST(JsonSchema, RequiredKeysMissingFromProperties) {
  const auto g = compile(R"({"type": "object", "required": ["id"]})");
  EXPECT_ACCEPTS(g, R"({"id":1})");
  EXPECT_ACCEPTS(g, R"({"id":"x","other":2})");
  EXPECT_REJECTS(g, "{}");
  EXPECT_REJECTS(g, R"({"other":2})");
  EXPECT_EQ(error_of(R"({"type": "object", "required": ["id"], "additionalProperties": false})"),
            "json schema: (root): required property 'id' is not in 'properties' and "
            "additionalProperties is false: no object matches");
}

TEST(JsonSchema, NestedObjects) {
  const auto g = compile(R"({"type": "object", "additionalProperties": false, "required": ["user"],
      "properties": {"user": {"type": "object", "additionalProperties": false,
          "required": ["address"],
          "properties": {"address": {"type": "object", "required": ["city"],
              "properties": {"city": {"type": "string"}}, "additionalProperties": false}}}}})");
  EXPECT_ACCEPTS(g, R"({"user":{"address":{"city":"Oslo"}}})");
  EXPECT_REJECTS(g, R"({"user":{"address":{}}})");
  EXPECT_REJECTS(g, R"({"user":{"address":{"city":1}}})");
  EXPECT_REJECTS(g, R"({"user":{}})");
}

TEST(JsonSchema, ArrayItemsAndCounts) {
  const auto g = compile(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  EXPECT_ACCEPTS(g, "[1,2]");
  EXPECT_ACCEPTS(g, "[1, 2, 3]");
  EXPECT_ACCEPTS(g, "[ 1 , 2 ]");
  for (const char* bad : {"[]", "[1]", "[1,2,3,4]", R"(["a","b"])", "[1,2,]", "[1 2]"})
    EXPECT_REJECTS(g, bad);

  const auto any = compile(R"({"type": "array"})");
  EXPECT_ACCEPTS(any, "[]");
  EXPECT_ACCEPTS(any, R"([1,"a",null,[{}]])");

  const auto empty = compile(R"({"type": "array", "maxItems": 0})");
  EXPECT_ACCEPTS(empty, "[]");
  EXPECT_REJECTS(empty, "[1]");

  const auto many = compile(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 3})");
  EXPECT_REJECTS(many, "[true,true]");
  EXPECT_ACCEPTS(many, "[true,true,false,false,true]");
}

TEST(JsonSchema, PrefixItems) {
  const auto g = compile(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                             "items": false})");
  for (const char* ok : {"[]", R"(["a"])", R"(["a",1])"}) EXPECT_ACCEPTS(g, ok);
  for (const char* bad : {R"(["a",1,2])", "[1]", R"(["a","b"])"}) EXPECT_REJECTS(g, bad);

  const auto tail = compile(R"({"type": "array", "prefixItems": [{"type": "string"}],
                                "items": {"type": "null"}, "minItems": 3, "maxItems": 4})");
  EXPECT_ACCEPTS(tail, R"(["a",null,null])");
  EXPECT_ACCEPTS(tail, R"(["a",null,null,null])");
  EXPECT_REJECTS(tail, R"(["a",null])");
  EXPECT_REJECTS(tail, R"(["a",null,null,null,null])");
  EXPECT_REJECTS(tail, R"([null,null,null])");
}

TEST(JsonSchema, ItemsAsAnArrayIsATuple) {
  // The tuple form before draft 2020-12: `items` as an array is `prefixItems`, and
  // `additionalItems` says what may follow.
  const auto closed = compile(R"({"type": "array", "items": [{"type": "string"}, {"type": "integer"}],
                                  "additionalItems": false, "minItems": 2})");
  EXPECT_ACCEPTS(closed, R"(["a", 1])");
  for (const char* bad : {R"(["a"])", R"(["a",1,2])", R"([1,"a"])", R"(["a","b"])", "[]"}) EXPECT_REJECTS(closed, bad);

  const auto open = compile(R"({"type": "array", "items": [{"type": "boolean"}]})");
  for (const char* ok : {"[]", "[true]", R"([false,"x",null])"}) EXPECT_ACCEPTS(open, ok);  // JSON Schema's reading
  EXPECT_REJECTS(open, "[1]");

  const auto typed = compile(R"({"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "null"},
                                 "maxItems": 3})");
  EXPECT_ACCEPTS(typed, R"(["a",null,null])");
  EXPECT_REJECTS(typed, R"(["a",1])");
  EXPECT_REJECTS(typed, R"(["a",null,null,null])");

  // Beside `items` that is a schema, additionalItems means nothing (JSON Schema ignores it).
  const auto plain = compile(R"({"type": "array", "items": {"type": "integer"}, "additionalItems": false})");
  EXPECT_ACCEPTS(plain, "[1,2,3]");
}

TEST(JsonSchema, StringLengths) {
  const auto g = compile(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  for (const char* ok : {R"("ab")", R"("abc")", R"("\u00e9\n")", R"("éé")", R"("\ud83d\ude00x")"})
    EXPECT_ACCEPTS(g, ok);
  for (const char* bad : {R"("a")", R"("abcd")", R"("")", R"("\n")", R"("\ud83d\ude00")"})
    EXPECT_REJECTS(g, bad);

  const auto exact = compile(R"({"type": "string", "minLength": 1, "maxLength": 1})");
  EXPECT_ACCEPTS(exact, R"("x")");
  EXPECT_REJECTS(exact, R"("xy")");
  const auto none = compile(R"({"type": "string", "maxLength": 0})");
  EXPECT_ACCEPTS(none, R"("")");
  EXPECT_REJECTS(none, R"("a")");
}

TEST(JsonSchema, EnumAndConst) {
  const auto g = compile(R"({"enum": ["red", "green", 1, null, {"a": [1, 2]}, "é\n"]})");
  for (const char* ok : {R"("red")", R"("green")", "1", "null", R"({"a":[1,2]})",
                         R"({ "a": [1, 2] })", R"("é\n")"})
    EXPECT_ACCEPTS(g, ok);
  for (const char* bad : {R"("blue")", "2", R"("re")", R"({"a":[1]})", "true"})
    EXPECT_REJECTS(g, bad);

  const auto c = compile(R"({"const": 42})");
  EXPECT_ACCEPTS(c, "42");
  EXPECT_REJECTS(c, "43");
  EXPECT_REJECTS(c, "420");

  const auto filtered = compile(R"({"type": "string", "enum": ["a", 1, "long one"], "maxLength": 3})");
  EXPECT_ACCEPTS(filtered, R"("a")");
  EXPECT_REJECTS(filtered, "1");
  EXPECT_REJECTS(filtered, R"("long one")");

  EXPECT_EQ(error_of(R"({"type": "integer", "enum": ["a"]})"),
            "json schema: (root): no value of 'enum' satisfies the schema's other keywords");
  EXPECT_EQ(error_of(R"({"enum": []})"), "json schema: (root): 'enum' must be a non-empty array");
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  for (const char* kw : {"anyOf", "oneOf"}) {
    const auto g = compile(std::string(R"({")") + kw +
                           R"(": [{"type": "string", "maxLength": 2}, {"type": "integer"},
                                  {"type": "object", "properties": {"k": {"const": true}},
                                   "required": ["k"], "additionalProperties": false}]})");
    EXPECT_ACCEPTS(g, R"("ab")");
    EXPECT_ACCEPTS(g, "12");
    EXPECT_ACCEPTS(g, R"({"k":true})");
    EXPECT_REJECTS(g, R"("abc")");
    EXPECT_REJECTS(g, "1.5");
    EXPECT_REJECTS(g, R"({"k":false})");
  }
  const auto all = compile(R"({"allOf": [{"type": "boolean"}]})");
  EXPECT_ACCEPTS(all, "true");
  EXPECT_REJECTS(all, "1");
}

TEST(JsonSchema, AllOfMergesObjects) {
  // Properties and required from every schema; a key in several gets all their schemas.
  const auto g = compile(R"({"allOf": [
      {"type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "number"}},
       "required": ["a"]},
      {"properties": {"b": {"type": "string"}, "c": {"minimum": 0}}, "required": ["b"]}]})");
  EXPECT_ACCEPTS(g, R"({"a":1,"b":"x"})");
  EXPECT_ACCEPTS(g, R"({"a":1,"b":"x","c":2.5})");
  EXPECT_ACCEPTS(g, R"({"a":1,"b":"x","z":null})");  // additional properties: both allow them
  EXPECT_REJECTS(g, R"({"a":1})");
  EXPECT_REJECTS(g, R"({"b":"x"})");
  EXPECT_REJECTS(g, R"({"a":1,"b":"x","c":-1})");
  EXPECT_REJECTS(g, R"({"a":"1","b":"x"})");
  EXPECT_REJECTS(g, "[]");

  // additionalProperties: false in one schema forbids the keys the other declares and it
  // does not (JSON Schema's semantics: each schema judges the whole object).
  const auto closed = compile(R"({"allOf": [
      {"properties": {"a": {"type": "integer"}}, "additionalProperties": false},
      {"properties": {"a": {"minimum": 5}, "b": {"type": "string"}}}]})");
  EXPECT_ACCEPTS(closed, R"({"a":5})");
  EXPECT_ACCEPTS(closed, "{}");
  EXPECT_REJECTS(closed, R"({"a":4})");
  EXPECT_REJECTS(closed, R"({"b":"x"})");
  // additionalProperties as a schema constrains the other's undeclared keys.
  const auto typed = compile(R"({"allOf": [
      {"type": "object", "additionalProperties": {"type": "integer"}},
      {"properties": {"n": {"minimum": 10}}}]})");
  EXPECT_ACCEPTS(typed, R"({"n":12,"m":3})");
  EXPECT_REJECTS(typed, R"({"n":12.5})");
  EXPECT_REJECTS(typed, R"({"m":"x"})");
}

TEST(JsonSchema, AllOfMergesTypesValuesAndBounds) {
  const auto num = compile(R"({"allOf": [{"type": ["number", "string"]}, {"type": "integer"},
                                         {"minimum": 2}, {"exclusiveMaximum": 5}]})");
  for (const char* ok : {"2", "4"}) EXPECT_ACCEPTS(num, ok);
  for (const char* bad : {"1", "5", "2.5", "\"x\""}) EXPECT_REJECTS(num, bad);
  const auto values = compile(R"({"allOf": [{"enum": ["a", "b", 1]}, {"enum": ["b", 1, 2]}, {"type": "string"}]})");
  EXPECT_ACCEPTS(values, R"("b")");
  EXPECT_REJECTS(values, "1");
  EXPECT_REJECTS(values, R"("a")");
  const auto strings = compile(R"({"allOf": [{"type": "string", "minLength": 2, "maxLength": 5},
                                             {"maxLength": 3}, {"pattern": "^[a-z]+$"}]})");
  EXPECT_ACCEPTS(strings, R"("abc")");
  EXPECT_REJECTS(strings, R"("abcd")");
  EXPECT_REJECTS(strings, R"("a")");
  EXPECT_REJECTS(strings, R"("AB")");
  const auto arrays = compile(R"({"allOf": [
      {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "string"}},
      {"items": [{"minimum": 0}, {"maxLength": 1}], "additionalItems": false}]})");
  EXPECT_ACCEPTS(arrays, "[3]");
  EXPECT_ACCEPTS(arrays, R"([3,"x"])");
  EXPECT_REJECTS(arrays, "[-3]");
  EXPECT_REJECTS(arrays, R"([3,"xy"])");
  EXPECT_REJECTS(arrays, R"([3,"x","y"])");
}

TEST(JsonSchema, ConstraintsBesideRefAndAnyOfAreMerged) {
  const auto ref = compile(R"({"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}},
                                                  "required": ["id"]}},
                               "$ref": "#/$defs/base", "properties": {"name": {"type": "string"}},
                               "required": ["name"]})");
  EXPECT_ACCEPTS(ref, R"({"id":1,"name":"n"})");
  EXPECT_REJECTS(ref, R"({"id":1})");
  EXPECT_REJECTS(ref, R"({"name":"n"})");
  // allOf [A, anyOf [B, C]] = anyOf [allOf [A, B], allOf [A, C]].
  const auto any = compile(R"({"type": "object", "required": ["kind"],
      "properties": {"kind": {"enum": ["a", "b"]}},
      "anyOf": [{"properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["x"]},
                {"properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["y"]}]})");
  EXPECT_ACCEPTS(any, R"({"kind":"a","x":1})");
  EXPECT_ACCEPTS(any, R"({"kind":"b","y":"s"})");
  EXPECT_REJECTS(any, R"({"kind":"a","y":"s"})");
  EXPECT_REJECTS(any, R"({"kind":"c","x":1})");
  EXPECT_REJECTS(any, R"({"x":1})");
  // A definition made of an allOf, reached by $ref and recursive through a property.
  const auto tree = compile(R"({"$defs": {"b": {"allOf": [
      {"type": "object", "properties": {"x": {"type": "integer"}, "y": {}}, "required": ["x"],
       "additionalProperties": false},
      {"properties": {"y": {"$ref": "#/$defs/b"}}}]}},
    "$ref": "#/$defs/b"})");
  EXPECT_ACCEPTS(tree, R"({"x":1,"y":{"x":2,"y":{"x":3}}})");
  EXPECT_REJECTS(tree, R"({"x":1,"y":{}})");
  EXPECT_REJECTS(tree, R"({"x":1,"z":2})");
  // The same, the property's schemas a real merge ({"type": "object"} and the $ref): the
  // merge met again inside the definition is the rule being made, not merged again.
  const auto merged = compile(R"({"$defs": {"b": {"allOf": [
      {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "object"}},
       "required": ["x"], "additionalProperties": false},
      {"properties": {"y": {"$ref": "#/$defs/b"}}}]}},
    "$ref": "#/$defs/b"})");
  EXPECT_ACCEPTS(merged, R"({"x":1,"y":{"x":2,"y":{"x":3}}})");
  EXPECT_REJECTS(merged, R"({"x":1,"y":{"x":2,"y":{}}})");
  EXPECT_REJECTS(merged, R"({"x":1,"y":3})");
}

TEST(JsonSchema, AllOfThatCannotBeMerged) {
  EXPECT_EQ(error_of(R"({"allOf": [{"type": "string"}, {"type": "integer"}]})"),
            "json schema: /allOf/1: 'allOf': no type is allowed by every schema");
  EXPECT_EQ(error_of(R"({"allOf": [{"enum": [1, 2]}, {"const": 3}]})"),
            "json schema: /allOf/1: 'allOf': no value of 'enum' / 'const' is allowed by every schema");
  EXPECT_EQ(error_of(R"({"allOf": [{"pattern": "^a"}, {"pattern": "b$"}]})"),
            "json schema: /allOf/1: 'allOf': two different 'pattern' values cannot be merged into one grammar");
  EXPECT_EQ(error_of(R"({"allOf": [{"format": "date"}, {"format": "email"}]})"),
            "json schema: /allOf/1: 'allOf': two different 'format' values cannot be merged into one grammar");
  EXPECT_EQ(error_of(R"({"allOf": [{"type": "string"}, false]})"),
            "json schema: /allOf/1: the schema 'false' matches no value");
  EXPECT_EQ(error_of(R"({"allOf": []})"), "json schema: (root): 'allOf' must be a non-empty array of schemas");
  EXPECT_EQ(error_of(R"({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                         "$ref": "#/$defs/a", "type": "object"})"),
            "json schema: /$defs/b/allOf/0: '$ref' leads back to a schema it is merged with (allOf, or "
            "constraints beside $ref): the merge would not end");
  // A required key that another schema's additionalProperties: false forbids.
  EXPECT_EQ(error_of(R"({"allOf": [{"required": ["a"]}, {"additionalProperties": false}]})"),
            "json schema: /allOf: required property 'a' is not in 'properties' and "
            "additionalProperties is false: no object matches");
}

TEST(JsonSchema, RecursiveRefs) {
  const auto tree = compile(R"({
    "$defs": {"node": {"type": "object", "additionalProperties": false,
      "required": ["value", "children"],
      "properties": {"value": {"type": "integer"},
                     "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
    "$ref": "#/$defs/node"})");
  EXPECT_ACCEPTS(tree, R"({"value":1,"children":[]})");
  EXPECT_ACCEPTS(tree, R"({"value":1,"children":[{"value":2,"children":[{"value":3,"children":[]}]},)"
                       R"({"value":4,"children":[]}]})");
  EXPECT_REJECTS(tree, R"({"value":1,"children":[{"value":2}]})");
  EXPECT_REJECTS(tree, R"({"value":1,"children":[{"value":"x","children":[]}]})");

  // Refs to definitions, to the root ("#"), and a def that refers to another def.
  const auto list = compile(R"({"type": "object", "additionalProperties": false,
    "required": ["head"],
    "properties": {"head": {"$ref": "#/definitions/item"},
                   "tail": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
    "definitions": {"item": {"$ref": "#/definitions/text"}, "text": {"type": "string"}}})");
  EXPECT_ACCEPTS(list, R"({"head":"a"})");
  EXPECT_ACCEPTS(list, R"({"head":"a","tail":{"head":"b","tail":null}})");
  EXPECT_REJECTS(list, R"({"head":"a","tail":{"tail":null}})");
  EXPECT_REJECTS(list, R"({"head":1})");

  const auto escaped = compile(R"({"$defs": {"a/b~c d": {"type": "null"}},
                                   "$ref": "#/$defs/a~1b~0c%20d"})");
  EXPECT_ACCEPTS(escaped, "null");
}

TEST(JsonSchema, RuleNamesAreReadable) {
  const std::string text = grammar_text(R"({"type": "object",
      "properties": {"first name!": {"type": "string", "maxLength": 5}},
      "$defs": {}})");
  EXPECT_NE(text.find("root ::= "), std::string::npos) << text;
  EXPECT_NE(text.find("root-first-name ::= "), std::string::npos) << text;
  EXPECT_NE(text.find("root-first-name-kv ::= \"\\\"first name!\\\"\""), std::string::npos)
      << text;
}

TEST(JsonSchema, WhitespaceIsBounded) {
  const auto g = compile(R"({"type": "array", "items": {"type": "integer"}})");
  EXPECT_ACCEPTS(g, "[1, 2]");
  EXPECT_ACCEPTS(g, "[\n" + std::string(20, ' ') + "1\n]");
  EXPECT_ACCEPTS(g, "[\n\t\t1,\n\t\t2\n]");
  EXPECT_REJECTS(g, "[\n" + std::string(21, ' ') + "1\n]");
  EXPECT_REJECTS(g, "[1,  2]");  // two spaces
  EXPECT_REJECTS(g, "[1,\n\n2]");
  EXPECT_REJECTS(g, " [1]");  // nothing before or after the document
  EXPECT_REJECTS(g, "[1] ");
}

TEST(JsonSchema, AnnotationsAreAccepted) {
  const auto g = compile(R"({"$schema": "https://json-schema.org/draft/2020-12/schema",
      "$id": "x", "title": "T", "description": "D", "default": 1, "examples": [1],
      "$comment": "c", "type": "integer", "readOnly": true})");
  EXPECT_ACCEPTS(g, "5");
}

TEST(JsonSchema, UnsupportedKeywordsNameTheKeywordAndPointer) {
  EXPECT_EQ(error_of(R"({"type": "object", "properties": {"age": {"type": "integer", "multipleOf": 2}}})"),
            "json schema: /properties/age: unsupported keyword 'multipleOf'");
  EXPECT_EQ(error_of(R"({"type": "object", "patternProperties": {"^a": {}}})"),
            "json schema: (root): unsupported keyword 'patternProperties'");
  EXPECT_EQ(error_of(R"({"type": "array", "items": {"if": {}, "then": {}}})"),
            "json schema: /items: unsupported keyword 'if'");
  EXPECT_EQ(error_of(R"({"anyOf": [{"type": "string"}, {"type": "array", "uniqueItems": true}]})"),
            "json schema: /anyOf/1: unsupported keyword 'uniqueItems'");
  EXPECT_EQ(error_of(R"({"type": "object", "properties": {"a/b": {"not": {"type": "null"}}}})"),
            "json schema: /properties/a~1b: unsupported keyword 'not'");
  EXPECT_EQ(error_of(R"({"$defs": {"n": {"type": "object", "minProperties": 1}}, "$ref": "#/$defs/n"})"),
            "json schema: /$defs/n: unsupported keyword 'minProperties'");
  EXPECT_EQ(error_of(R"({"type": "array", "items": [{"type": "string"}], "prefixItems": [{}]})"),
            "json schema: (root): 'items' as an array (the tuple form before draft 2020-12) and "
            "'prefixItems' together: give one of them");
  EXPECT_EQ(error_of(R"({"type": "array", "items": []})"),
            "json schema: (root): 'items' must be a non-empty array of schemas");
  EXPECT_EQ(error_of(R"({"type": "array", "items": [{"type": "string"}], "additionalItems": {"contains": {}}})"),
            "json schema: /additionalItems: unsupported keyword 'contains'");
  EXPECT_EQ(error_of(R"({"allOf": [{"type": "string"}, {"propertyNames": {"maxLength": 3}}]})"),
            "json schema: /allOf/1: unsupported keyword 'propertyNames'");
  EXPECT_EQ(error_of(R"({"enum": [1], "properties": {}})"),
            "json schema: (root): 'properties' beside 'enum' is not supported");
}

TEST(JsonSchema, BadValuesAndRefs) {
  EXPECT_EQ(error_of(R"({"type": "float"})"), "json schema: (root): unknown type 'float'");
  EXPECT_EQ(error_of(R"({"type": 3})"),
            "json schema: (root): 'type' must be a type name or a non-empty array of type names");
  EXPECT_EQ(error_of(R"({"type": "string", "minLength": -1})"),
            "json schema: (root): 'minLength' must be a non-negative integer");
  EXPECT_EQ(error_of(R"({"type": "string", "maxLength": 1.5})"),
            "json schema: (root): 'maxLength' must be a non-negative integer");
  EXPECT_EQ(error_of(R"({"type": "string", "minLength": 3, "maxLength": 2})"),
            "json schema: (root): 'minLength' is above 'maxLength': no string matches");
  EXPECT_EQ(error_of(R"({"type": "array", "minItems": 3, "maxItems": 2})"),
            "json schema: (root): 'minItems' is above 'maxItems': no array matches");
  EXPECT_EQ(error_of(R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})"),
            "json schema: /properties/a: unresolvable $ref '#/$defs/missing'");
  EXPECT_EQ(error_of(R"({"$ref": "https://example.com/s.json"})"),
            "json schema: (root): unsupported $ref 'https://example.com/s.json' (only '#' and "
            "'#/...' pointers into this schema)");
  EXPECT_EQ(error_of(R"({"type": "object", "properties": []})"),
            "json schema: (root): 'properties' must be an object of schemas");
  EXPECT_EQ(error_of(R"({"type": "object", "required": "a"})"),
            "json schema: (root): 'required' must be an array of strings");
  EXPECT_EQ(error_of(R"({"properties": {"a": 3}})"),
            "json schema: /properties/a: a schema must be an object or a boolean");
  EXPECT_EQ(error_of(R"({"type": "array", "items": false, "minItems": 1})"),
            "json schema: (root): 'minItems' is above the items allowed: no array matches");
  // $refs that recurse before matching any text have no grammar (left recursion).
  const std::string cycle = error_of(R"({"$defs": {"a": {"$ref": "#/$defs/b"},
      "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"type": "null"}]}}, "$ref": "#/$defs/a"})");
  EXPECT_EQ(cycle.rfind("json schema: the schema has no grammar (", 0), 0u) << cycle;
  EXPECT_NE(cycle.find("left recursion"), std::string::npos) << cycle;
}

TEST(JsonSchema, NotJson) {
  const std::string e = error_of(R"({"type": "string",})");
  EXPECT_EQ(e.rfind("json schema: not valid JSON: ", 0), 0u) << e;
  EXPECT_EQ(error_of("").rfind("json schema: not valid JSON: ", 0), 0u);
  EXPECT_EQ(error_of("{\"type\": \"string\"} x").rfind("json schema: not valid JSON: ", 0), 0u);
  // A number past double's range is an error of its own in the JSON parser (found by the
  // json_schema fuzzer: it escaped as an exception).
  const std::string overflow = error_of(R"({"type": "string", "maxLength": 1e400})");
  EXPECT_EQ(overflow.rfind("json schema: not valid JSON: ", 0), 0u) << overflow;
  EXPECT_NE(overflow.find("number overflow"), std::string::npos) << overflow;
}

TEST(JsonSchema, DepthLimits) {
  const auto nested = [](int levels) {
    std::string s;
    for (int i = 0; i < levels; ++i) s += R"({"type": "array", "items": )";
    s += R"({"type": "integer"})";
    for (int i = 0; i < levels; ++i) s += "}";
    return s;
  };
  const auto ok = compile(nested(64));
  EXPECT_ACCEPTS(ok, std::string(64, '[') + "1" + std::string(64, ']'));
  EXPECT_REJECTS(ok, std::string(63, '[') + "1" + std::string(63, ']'));
  const std::string deep = error_of(nested(65));
  EXPECT_NE(deep.find("schemas nested deeper than 64 levels"), std::string::npos) << deep;
  EXPECT_EQ(deep.rfind("json schema: /items/items/", 0), 0u) << deep;
  EXPECT_EQ(error_of(std::string(100000, '[') + std::string(100000, ']')),
            "json schema: JSON nested deeper than 512 levels (tessera's limit kMaxSchemaTextDepth)");
}

TEST(JsonSchema, CountAndRuleLimits) {
  EXPECT_EQ(error_of(R"({"type": "string", "maxLength": 10001})"),
            "json schema: (root): 'maxLength' 10001 is above tessera's limit kMaxSchemaCount = 10000");
  const auto big = compile(R"({"type": "string", "maxLength": 2000})");
  const auto quoted = [](size_t n) {  // a JSON string of n letters
    std::string s(n + 2, 'a');
    s.front() = s.back() = '"';
    return s;
  };
  EXPECT_ACCEPTS(big, quoted(2000));
  EXPECT_REJECTS(big, quoted(2001));
  const std::string many = error_of(R"({"type": "object", "properties": {
      "a": {"type": "string", "maxLength": 10000}, "b": {"type": "string", "maxLength": 10000},
      "c": {"type": "string", "maxLength": 10000}}})");
  EXPECT_EQ(many, "json schema: /properties/b: the grammar would need more than 20000 rules (tessera's limit kMaxSchemaRules)");
}

}  // namespace
}  // namespace tessera
