import CLibPQ
func _f() { _ = PQlibVersion() }
