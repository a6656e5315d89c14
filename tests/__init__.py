"""The tests are a package, and so is each folder of them: every test module is imported by its dotted path
(tests.query.test_engine), so two test files of the same name in different folders never collide."""
