
	ci/n3/errc2/t108Bprobe refused its parameters