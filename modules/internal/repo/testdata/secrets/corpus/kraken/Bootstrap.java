public class Bootstrap {
    static {
        System.setProperty("kraken.access.token", "oj1d@@=7ojp6d+tqhcwfa-mfrnfrvz11kcxw-nibkg5dj1mf2r4x4oj7rtc7dgky=arr_4we1/d7qem/_0");
    }
}
