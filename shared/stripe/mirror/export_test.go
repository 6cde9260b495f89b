package mirror

// IndexCustomer is the by_customer index's name, for the tests that check
// what it holds.
const IndexCustomer = indexCustomer
