// Package ownership checks that the names a package owns, the attribute and
// index names of the table it alone reads and writes, appear in no other
// package's Go source. The owner's tests call Check (see shared/storage/store and
// shared/stripe/mirror), so a package that starts reading the table itself, or a
// rename that would break one silently, fails make test.
//
// Owned collects what a package owns from its non-test Go files: the
// string constants whose names start with attr, index or prefix, and the
// names of dynamodbav struct tags. Scan parses every other Go file of the
// repository (tests included) and reports a string literal (never a
// comment, a struct tag or an import path) that uses one of them the way
// DynamoDB reads it:
//
//   - exact: the whole literal is an owned name, unless the owner lists the
//     name as shared vocabulary (a word other vocabularies use as well: a
//     JSON field, a log key, an operator's label, like "status");
//   - expression: the name, as a word, in a literal that reads as a
//     DynamoDB expression (a :value or #name placeholder, a function such
//     as attribute_exists(, or SET/REMOVE/ADD/DELETE clauses) or that is
//     the value of a request's *Expression, IndexName or
//     ExpressionAttributeNames field;
//   - item: a key of a map[string]...AttributeValue literal, or the key an
//     item of a response (x.Item[...], x.Key[...], x.Attributes[...]) is
//     indexed with;
//   - declared: the value of a constant named attr*, index* or prefix*:
//     the owner's name declared a second time.
//
// The last three apply to shared vocabulary too. Names that end in "#" are
// key prefixes, matched at the start of a literal.
package ownership
