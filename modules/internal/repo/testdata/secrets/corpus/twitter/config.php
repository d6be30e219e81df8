<?php
$config['twitter_bearer_token'] = "AAAA@@AAAAAAAAAAAAAAAAAAUQwjfacPDWShe0IqlLpdjAr%6KKAXQFsrYFbI2VGdljbe8kZbpjDQnnyBWD4iEEwr7S1XPeJhjJXoEH5";
