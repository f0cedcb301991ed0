//! ReadRows on the client side: the chunk merger (`spec/bigtable.md` 15) and the ReadRows
//! machine that nests it with retry and resume.
