<?php
$config['sidekiq_secret'] = "5ef5@@7fac:ddea3916";
