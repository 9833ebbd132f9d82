import CMicroHTTPD
import CZlib
let _x = pt_mhd_yes()
