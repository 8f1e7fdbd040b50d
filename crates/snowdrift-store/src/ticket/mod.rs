//! Ticket mode (Flickr's ticket servers): interleaved `auto_increment` or sequences on
//! several databases.
