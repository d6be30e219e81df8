<?php
$config['twitter_bearer_token'] = "AAAA@@AAAAAAAAAAAAAAAAAA6yZ7fauGh0tUCwJMlID4NMCY8FZZ2KK%kjLZ1STSfL8dTJ3ghd7NvXfgranfL5OVqu65ulmxvnvGhs1N";
