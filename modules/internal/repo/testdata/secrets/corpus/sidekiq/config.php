<?php
$config['sidekiq_secret'] = "cafe@@babe:deadbeef";
